"""Lab 1 as learners might hand it in: the solution with one of the lesson's common mistakes (section 17).

Each variant is the solution notebook with a few lines replaced, so it differs from a passing notebook in
exactly one idea. `EXPECTED_FAILURES` names the hidden checks each mistake must fail (at least).
"""

from __future__ import annotations

import copy
import io
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from mercadofresco.course import grading
from mercadofresco.course.grading import reports
from mercadofresco.course.grading.results import LearnerReport
from mercadofresco.course.run import nbrun

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "solutions" / "lab1_double_charge.ipynb"

HANDLER_CELL = "l16"
KEY_LINE = 'clave = f"cobro:{order.pedido_id}"'
FREE = 'free = "attribute_not_exists(clave) OR expira_en < :now OR (estado = :en_curso AND caduca_bloqueo < :now)"'

# name -> [(cell id, text in the solution, replacement)]
EDITS: dict[str, list[tuple[str, str, str]]] = {
    # "The SQS MessageId changes if the producer resends the same work."
    "messageid_key": [(HANDLER_CELL, KEY_LINE, "clave = f\"cobro:{record['messageId']}\"")],
    # "A UUID generated in the consumer changes on every attempt."
    "consumer_uuid": [(HANDLER_CELL, KEY_LINE, "clave = f\"cobro:{__import__('uuid').uuid4()}\"")],
    # The key names only the order, not the operation: another operation on the same order blocks the charge.
    "bare_order_key": [(HANDLER_CELL, KEY_LINE, "clave = order.pedido_id")],
    # "With only two states, both would see 'it is not there' and both would charge": check, then write.
    "two_states": [
        (
            HANDLER_CELL,
            "        try:\n            dynamodb.put_item(",
            "        found = dynamodb.get_item(TableName=table_name, Key={'clave': {'S': clave}}).get('Item')\n"
            "        if found and int(found['expira_en']['N']) >= now:\n"
            "            return found\n"
            "        return None\n"
            "        try:\n            dynamodb.put_item(",
        )
    ],
    # "Locking with EN_CURSO without expiry": the claim never runs out.
    "lock_without_expiry": [
        (HANDLER_CELL, FREE, 'free = "attribute_not_exists(clave) OR expira_en < :now"'),
        (HANDLER_CELL, '"caduca_bloqueo": {"N": str(now + LOCK_SECONDS)},', ""),
    ],
    # "Raising visibility as the only fix": the incident's consumer (no table, no key) behind a longer visibility.
    "visibility_only": [
        (
            HANDLER_CELL,
            "    def claim(clave, now):",
            "    def handler(event, context):\n"
            "        for record in event['Records']:\n"
            "            order = orders.parse_order(record['body'])\n"
            "            client.charge(order.pedido_id, order.importe, None, context)\n"
            "        return {'batchItemFailures': []}\n\n"
            "    return handler\n\n"
            "    def claim(clave, now):",
        ),
        ("l13", '"read_timeout_seconds": 30', '"read_timeout_seconds": 180'),
        ("l13", '"sdk_max_attempts": 2', '"sdk_max_attempts": 5'),
        ("l13", 'root_fix = "idempotency_table"', 'root_fix = "visibility_400"'),
        (
            "l13",
            'fix_order = ["idempotency_table", "gateway_key", "visibility_400",',
            'fix_order = ["visibility_400", "idempotency_table", "gateway_key",',
        ),
    ],
    # The TTL trusted to delete expired records: moto never does, DynamoDB does it late.
    "ttl_trusted": [
        (HANDLER_CELL, FREE, 'free = "attribute_not_exists(clave) OR (estado = :en_curso AND caduca_bloqueo < :now)"')
    ],
    # A transient failure that keeps the claim: the next delivery finds EN_CURSO and cannot charge.
    "transient_keeps_lock": [(HANDLER_CELL, "            release(clave)\n", "")],
    # No table at all: the handler charges each record, with the order's key for the gateway (issue 23).
    "no_table": [
        (
            HANDLER_CELL,
            "    def handler(event, context):\n        failures = []\n",
            "    def handler(event, context):\n"
            "        for record in event['Records']:\n"
            "            order = orders.parse_order(record['body'])\n"
            "            client.charge(order.pedido_id, order.importe, f'cobro:{order.pedido_id}', context)\n"
            "        return {'batchItemFailures': []}\n\n"
            "    def unused(event, context):\n        failures = []\n",
        )
    ],
    # Issue 22's four more, as a learner who half-read the section would write them.
    # A declined card treated like a 503: the claim is released and the gateway asked again on every delivery.
    "declined_retried": [
        (
            HANDLER_CELL,
            "        except gateway.CardDeclinedError as exc:\n"
            '            finish(clave, "FALLIDO", str(exc), int(context.now().timestamp()))\n'
            "            return True\n",
            "        except gateway.CardDeclinedError:\n            release(clave)\n            return False\n",
        )
    ],
    # A copy that finds COMPLETADO is reported as failed: it comes back until the DLQ takes it.
    "completed_reported_failed": [
        (HANDLER_CELL, '            return held.get("estado", {}).get("S") != "EN_CURSO"', "            return False")
    ],
    # A lock that lasts a day: a consumer that died after claiming holds the order until tomorrow.
    "lock_for_a_day": [(HANDLER_CELL, "LOCK_SECONDS = 90", "LOCK_SECONDS = 24 * 3600")],
    # COMPLETADO written before the charge: a death in between leaves an order marked done and never charged.
    "completed_before_charge": [
        (
            HANDLER_CELL,
            '        context.crashes.reached("after_lock")\n',
            '        finish(clave, "COMPLETADO", "pendiente", int(context.now().timestamp()))\n'
            '        context.crashes.reached("after_lock")\n',
        )
    ],
}

EXPECTED_FAILURES = {
    "messageid_key": {"record_contract", "exactly_once"},
    "consumer_uuid": {"record_contract", "exactly_once"},
    "two_states": {"exactly_once"},
    "bare_order_key": {"exactly_once"},
    "lock_without_expiry": {"exactly_once"},
    "visibility_only": {"fix_order", "config_relations", "exactly_once", "incident_replay"},
    "ttl_trusted": {"exactly_once"},
    "transient_keeps_lock": {"exactly_once"},
    "no_table": {"record_contract", "exactly_once"},
    "declined_retried": {"declined_stays_failed"},
    "completed_reported_failed": {"exactly_once"},
    "lock_for_a_day": {"exactly_once"},
    "completed_before_charge": {"exactly_once"},
}

LOOP = "    xs = []\n    while True:\n        xs.append(1)\n"

# A handler that hangs for one order only, PED-2026-900001: the one the hidden check `record_contract` charges.
# The learner's own cells never meet it; only that check hangs, and grading must go on after it.
HANGS_ON_ONE_ORDER = [
    (
        HANDLER_CELL,
        '        order = orders.parse_order(record["body"])\n',
        '        order = orders.parse_order(record["body"])\n'
        '        while order.pedido_id == "PED-2026-900001":\n'
        "            pass\n",
    )
]


def solution() -> nbformat.NotebookNode:
    """The solution notebook, as the instructor has it."""
    return nbformat.read(SOLUTION, as_version=4)


def variant(name: str) -> nbformat.NotebookNode:
    """The solution with the mistake `name`, and without its hidden cells (a learner never has them)."""
    return edited(EDITS[name], name)


def edited(
    edits: list[tuple[str, str, str]], name: str, source: nbformat.NotebookNode | None = None
) -> nbformat.NotebookNode:
    """A solution (lab 1's unless `source` is given) without its hidden cells, with `edits` applied."""
    notebook = copy.deepcopy(source or solution())
    notebook.cells = [cell for cell in notebook.cells if "hidden" not in str(cell.metadata.get("tags", []))]
    cells = {cell.get("id"): cell for cell in notebook.cells}
    for cell_id, old, new in edits:
        source = cells[cell_id].source
        assert old in source, f"variant {name}: {old!r} is no longer in cell {cell_id}; update tests/labs/lab_variants.py"
        cells[cell_id].source = source.replace(old, new, 1)
    return notebook


def looping() -> nbformat.NotebookNode:
    """The solution whose first solution region is `while True: xs.append(1)`: it never finishes, eating memory."""
    notebook = copy.deepcopy(solution())
    notebook.cells = [cell for cell in notebook.cells if "hidden" not in str(cell.metadata.get("tags", []))]
    cell = next(cell for cell in notebook.cells if cell.get("id") == "l03")
    start, end = cell.source.index("    ### BEGIN SOLUTION"), cell.source.index("    ### END SOLUTION")
    cell.source = cell.source[:start] + LOOP + cell.source[end + len("    ### END SOLUTION") :]
    return notebook


def write(notebook: nbformat.NotebookNode, path: Path) -> Path:
    """Write a notebook and return its path."""
    nbformat.write(notebook, path)
    return path


def grade_against_aimed_checks(
    folder: Path, lab: str, limits: nbrun.Limits | None, aimed: dict[str, set[str]], solutions_dir: Path | None = None
) -> dict[str, LearnerReport]:
    """Grade every notebook in `folder`: a variant named in `aimed` with only its aimed checks, the rest with all.

    A variant is there to show that the checks aimed at it fail, and no test reads its other verdicts: leaving
    them out saves about 4 s of lab 3's 9 s a learner, 2 s of lab 1's 7 s (measured 2026-12-04). Each learner is
    graded through the grader's own regrade (`grade(learners=..., only=...)`), two at a time as with `jobs=2`.
    A variant's report keeps only the checks that ran: the grader marks the others "not run", failed, which
    would make "the aimed checks fail" hold for any notebook.
    """
    names = sorted((path.stem for path in folder.glob("*.ipynb")), key=lambda name: name in aimed)  # all first

    def one(name: str) -> LearnerReport:
        only = tuple(sorted(aimed.get(name, ())))
        where = {"solutions_dir": solutions_dir} if solutions_dir else {}
        quiet = reports.Progress(1, stream=io.StringIO())  # no bar: stderr may be another test's, closed by now
        (report,) = grading.grade(folder, lab, limits, learners=(name,), only=only, progress=quiet, **where)
        if only:
            report.checks = [result for result in report.checks if result.check in only]
            assert {result.check for result in report.checks} == set(only), f"{name}: {report.checks}"
        return report

    with ThreadPoolExecutor(2) as pool:
        return {report.learner: report for report in pool.map(one, names)}
