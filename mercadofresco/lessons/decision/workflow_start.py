"""EventBridge -> Step Functions: a fact starts one process per order (notebook 15).

The rule's own Step Functions target (PutTargets' `Target`) has no field that
names the execution: Step Functions makes a name up, so an event delivered
twice starts two executions. moto accepts such a target but `put_events` then
raises NotImplementedError, so that path is a model (StartExecution without a name).

Naming executions after the pedido_id takes a consumer of our own:
rule -> `cola-mercadofresco-procesar-pedido` -> `run_starter` ->
`start_for_event` (StartExecution(name=pedido_id)), on moto. A same-name start
returns the execution only while it is open; once it has closed the name is
refused for 90 days, and `start_for_event` tells that from a different input.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import botocore.session
from botocore.exceptions import ClientError

from mercadofresco import queues, world
from mercadofresco.errors import MercadoFrescoError
from mercadofresco.i18n import T_, _, pgettext
from mercadofresco.lessons.decision.combinations import ROLE_ARN, drain, order_event

PROCESS_MACHINE = "mercadofresco-procesar-pedido"
PROCESS_RULE = "regla-mercadofresco-procesar-pedido"
PROCESS_QUEUE = "cola-mercadofresco-procesar-pedido"
ORDER = "PED-2026-084417"


def create_process_machine(aws: world.World) -> str:
    """mercadofresco-procesar-pedido, reduced to its shape: prepare, ship, and a compensation path."""
    definition = {
        "StartAt": "Preparar",
        "States": {
            "Preparar": {"Type": "Pass", "Next": "Enviar"},
            "Enviar": {"Type": "Pass", "End": True},
            "Compensar": {"Type": "Pass", "End": True},
        },
    }
    return aws.client("stepfunctions").create_state_machine(
        name=PROCESS_MACHINE, definition=json.dumps(definition), roleArn=ROLE_ARN
    )["stateMachineArn"]


def step_functions_target_on_moto(aws: world.World, machine_arn: str) -> str:
    """Put the state machine behind a rule, as in AWS, and say what moto does with an event; leave no trace."""
    events = aws.client("events")
    pattern = {"source": [world.ORDER_SOURCE], "detail-type": ["PedidoConfirmado"]}
    events.put_rule(Name=PROCESS_RULE, EventBusName=world.BUS, EventPattern=json.dumps(pattern))
    target = {"Id": "procesar", "Arn": machine_arn, "RoleArn": ROLE_ARN}  # PutTargets' Target: nothing names the run
    events.put_targets(Rule=PROCESS_RULE, EventBusName=world.BUS, Targets=[target])
    try:
        events.put_events(Entries=[order_event(ORDER)])
        answer = _("delivered")
    except NotImplementedError as exc:
        answer = _("put_events raised NotImplementedError ({error})").format(error=exc)
    finally:
        events.remove_targets(Rule=PROCESS_RULE, EventBusName=world.BUS, Ids=["procesar"])
        events.delete_rule(Name=PROCESS_RULE, EventBusName=world.BUS)
        drain(aws.sqs, aws.warehouse_queue_url)  # moto had already delivered the warehouse rule's copy
    return answer


def target_fields() -> list[str]:
    """The fields of PutTargets' Target in the installed botocore: the API this notebook's rule uses."""
    return list(botocore.session.get_session().get_service_model("events").shape_for("Target").members)


class ExecutionConflictError(MercadoFrescoError):
    """An execution with this name exists with another input: a real conflict, never silently ignored."""


@dataclass(frozen=True)
class Start:
    """What StartExecution named after the pedido_id came to.

    `outcome` is "open" when the execution was started now or was already
    running with the same input (StartExecution answers both alike), and
    "closed" when the name already ran to an end with the same input: the
    process happened, the delivery is a duplicate, the name is refused for 90 days.
    """

    execution_arn: str
    outcome: str
    status: str


def canonical_input(detail: dict[str, Any]) -> str:
    """The execution input for an order: its detail, serialised one way only.

    Step Functions compares inputs as strings, so two deliveries of the same
    order must serialise identically; the envelope (id, time) is left out.
    """
    return json.dumps(detail, sort_keys=True, separators=(",", ":"))


def execution_arn(machine_arn: str, name: str) -> str:
    """The ARN Step Functions gives the execution `name` of `machine_arn`."""
    return machine_arn.replace(":stateMachine:", ":execution:", 1) + ":" + name


def start_for_event(sfn: Any, machine_arn: str, detail: dict[str, Any]) -> Start:
    """StartExecution named after the order, telling a closed execution from a different input.

    Same name, same input, still running: Step Functions returns that execution.
    Same name once the execution has closed: ExecutionAlreadyExists, whatever
    the input; describe_execution then tells a duplicate of a finished process
    ("closed") from a different order under the same name (ExecutionConflictError).
    """
    name, payload = detail["pedido_id"], canonical_input(detail)
    try:
        response = sfn.start_execution(stateMachineArn=machine_arn, name=name, input=payload)
        return Start(response["executionArn"], "open", "RUNNING")
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ExecutionAlreadyExists":
            raise  # anything else is not ours to judge: the message goes back to the queue
        arn = execution_arn(machine_arn, name)
        existing = sfn.describe_execution(executionArn=arn)
        if existing["input"] != payload:
            said = _("execution {name} exists ({status}) with another input")
            raise ExecutionConflictError(said.format(name=name, status=existing["status"])) from exc
        return Start(arn, "closed", existing["status"])


def run_starter(aws: world.World, machine_arn: str, queue_url: str) -> list[str]:
    """The consumer between the rule and the workflow: each event -> start_for_event, then delete.

    A conflict is left in the queue (its redrive policy parks it in a DLQ for a person).
    """
    sfn, answers = aws.client("stepfunctions"), []
    while messages := aws.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get(
        "Messages"
    ):
        for message in messages:
            try:
                start = start_for_event(sfn, machine_arn, json.loads(message["Body"])["detail"])
            except ExecutionConflictError:
                answers.append(_("refused: another input under this name (left for the DLQ)"))
                continue
            said = pgettext("execution", "open") if start.outcome == "open" else pgettext("execution", "closed")
            answers.append(f"{said} ({start.status})")
            aws.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return answers


def add_process_rule(aws: world.World) -> str:
    """regla-mercadofresco-procesar-pedido -> cola-mercadofresco-procesar-pedido, where the starter reads."""
    events, sqs = aws.client("events"), aws.sqs
    pattern = {"source": [world.ORDER_SOURCE], "detail-type": ["PedidoConfirmado"]}
    events.put_rule(Name=PROCESS_RULE, EventBusName=world.BUS, EventPattern=json.dumps(pattern))
    url = sqs.create_queue(QueueName=PROCESS_QUEUE)["QueueUrl"]
    target = {"Id": "procesar", "Arn": queues.queue_arn(sqs, url)}
    events.put_targets(Rule=PROCESS_RULE, EventBusName=world.BUS, Targets=[target])
    return url


def start_unnamed(sfn: Any, machine_arn: str, event: dict[str, Any]) -> str:
    """A model of the rule's Step Functions target: StartExecution with no name, the event as input."""
    return sfn.start_execution(stateMachineArn=machine_arn, input=json.dumps(event))["executionArn"]


def eventbridge_to_step_functions(aws: world.World) -> dict[str, Any]:
    """PedidoConfirmado twice, again after its execution closed, then with another importe: what starts.

    The rule's own target is a model (moto cannot deliver to it); the named
    path, rule -> SQS -> starter, runs on moto. Each row counts the executions
    of mercadofresco-procesar-pedido its path has started so far.
    """
    sfn, events = aws.client("stepfunctions"), aws.client("events")
    machine = create_process_machine(aws)
    moto_answer = step_functions_target_on_moto(aws, machine)
    event = order_event(ORDER)
    arns = [start_unnamed(sfn, machine, event) for _ in range(2)]  # one StartExecution per delivery
    answers = [_("started") if arn not in arns[:k] else _("returned it") for k, arn in enumerate(arns)]
    rows = [_row(T_("rule target, no name (model): 2 deliveries"), answers, _executions(sfn, machine, named=False))]
    queue_url = add_process_rule(aws)
    changed = event | {"Detail": json.dumps(json.loads(event["Detail"]) | {"importe": "52.10"})}
    for step, entries in (
        (T_("rule -> SQS -> starter: the same 2 deliveries"), [event, event]),
        (T_("the same event after its execution closed"), [event]),
        (T_("same pedido_id, another importe"), [changed]),
    ):
        events.put_events(Entries=entries)
        rows.append(_row(step, run_starter(aws, machine, queue_url), _executions(sfn, machine, named=True)))
        if len(rows) == 2:  # close it (moto runs no workflow, so stop it); a replay or a redrive comes later
            sfn.stop_execution(executionArn=execution_arn(machine, ORDER))
    aws.sqs.purge_queue(QueueUrl=queue_url)  # the conflict would wait for a DLQ this demo does not build
    drain(aws.sqs, aws.warehouse_queue_url)  # the warehouse rule got its copies too
    return {"moto, rule with a state machine target": moto_answer, "steps": rows}


def _row(step: str, answers: list[str], executions: int) -> dict[str, Any]:
    return {"step": step, "StartExecution": ", ".join(answers), "executions": executions}


def _executions(sfn: Any, machine_arn: str, named: bool) -> int:
    """Executions of the order named after it (named) or under names Step Functions made up."""
    names = [e["name"] for e in sfn.list_executions(stateMachineArn=machine_arn)["executions"]]
    return names.count(ORDER) if named else len(names) - names.count(ORDER)
