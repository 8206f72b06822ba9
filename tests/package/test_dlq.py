"""DLQ tools: inspection deletes nothing, the content decides the class, redrive is paced and verified."""

import datetime as dt
import subprocess
import sys
from decimal import Decimal

import boto3
import pytest
from moto import mock_aws

from mercadofresco import alarms, orders, queues, world
from mercadofresco.lessons.dlq import figures, incidents, redrive
from mercadofresco.models import alarm_evaluation, gateway, move_task
from mercadofresco.patterns import dlq
from mercadofresco.shop import handlers
from mercadofresco.sims import lambda_scaling, mass_redrive


def bodies(aws, url):
    return sorted(s.body for s in dlq.inspect(aws.sqs, url, max_messages=1000))


def classify_by_time_only(samples):
    """The wrong variant: a burst means transient, a trickle means poison."""
    return dlq.FailureKind.TRANSIENT if dlq.time_shape(samples) is dlq.TimeShape.BURST else dlq.FailureKind.POISON


@pytest.fixture
def kinds(aws, clock):
    return incidents.seed_kinds(aws, clock, seed=7).incidents


def test_inspect_deletes_nothing(aws, clock):
    incident = incidents.seed_exercise2_incident(aws, clock, seed=1, count=40)
    assert incident.count == 40
    before = bodies(aws, incident.dlq_url)
    clock.advance(6)
    sample = dlq.inspect(aws.sqs, incident.dlq_url, max_messages=10)
    assert len(sample) == 10
    clock.advance(6)  # 5 s visibility: they are back
    assert bodies(aws, incident.dlq_url) == before and len(before) == 40


def test_alarm_replay_fires_the_count_alarm_at_2209_and_the_age_alarm_an_hour_later(aws, clock):
    rows = incidents.seed_kinds(aws, clock, seed=0, watch="rafaga-version-2").alarm_rows
    first_count = next(row["at"] for row in rows if row["count"] == "ALARM")
    first_age = next(row["at"] for row in rows if row["age"] == "ALARM")
    assert (first_count.hour, first_count.minute) == (22, 9)
    assert (first_age.hour, first_age.minute) == (23, 9)


def test_exercise2_seed_has_the_lessons_shape(aws, clock):
    incident = incidents.seed_exercise2_incident(aws, clock, seed=1, count=60)
    sample = dlq.inspect(aws.sqs, incident.dlq_url, max_messages=10)
    assert {s.receive_count for s in sample} == {5}
    assert all(s.problem == "version 2, this consumer expects 1" for s in sample)
    assert clock.now() == incidents.MONDAY_0900
    clock.advance(6)
    everything = dlq.inspect(aws.sqs, incident.dlq_url, max_messages=1000)
    assert everything[0].sent_at == incidents.SUNDAY_2204 and everything[-1].sent_at == incidents.SUNDAY_2351
    sent = aws.sqs.receive_message(QueueUrl=incident.source_url, MessageSystemAttributeNames=["All"], WaitTimeSeconds=0)
    oldest_ms = int(sent["Messages"][0]["Attributes"]["SentTimestamp"])
    assert incidents.MONDAY_0900.timestamp() - oldest_ms / 1000 == pytest.approx(incidents.SOURCE_OLDEST_SECONDS)
    with pytest.raises(incidents.SeedError):
        incidents.seed_exercise2_incident(aws, clock)


def test_classifier_labels_each_seeded_incident(aws, clock, kinds):
    for incident in kinds.values():
        samples = dlq.inspect(aws.sqs, incident.dlq_url, max_messages=1000)
        assert dlq.classify(samples).kind is incident.expected_kind, incident.name
    clock.advance(6)
    assert dlq.time_shape(dlq.inspect(aws.sqs, kinds["rafaga-transitoria"].dlq_url, 1000)) is dlq.TimeShape.BURST
    assert dlq.time_shape(dlq.inspect(aws.sqs, kinds["rafaga-version-2"].dlq_url, 1000)) is dlq.TimeShape.BURST
    assert dlq.time_shape(dlq.inspect(aws.sqs, kinds["goteo-veneno"].dlq_url, 1000)) is dlq.TimeShape.TRICKLE


def test_time_only_classifier_mislabels_the_version_2_burst(aws, kinds):
    samples = dlq.inspect(aws.sqs, kinds["rafaga-version-2"].dlq_url, max_messages=1000)
    assert classify_by_time_only(samples) is dlq.FailureKind.TRANSIENT  # the clue misleads
    assert dlq.classify(samples).kind is dlq.FailureKind.POISON  # the content is the proof
    transient = dlq.inspect(aws.sqs, kinds["rafaga-transitoria"].dlq_url, max_messages=1000)
    assert classify_by_time_only(transient) is dlq.classify(transient).kind is dlq.FailureKind.TRANSIENT


def test_the_verdict_is_an_enum_with_the_lessons_names_and_its_evidence_is_data(aws, kinds):
    verdict = dlq.classify(dlq.inspect(aws.sqs, kinds["rafaga-version-2"].dlq_url, max_messages=1000))
    assert isinstance(verdict.kind, dlq.FailureKind) and isinstance(verdict.time_shape, dlq.TimeShape)
    assert {kind.value for kind in dlq.FailureKind} == {"poison", "transient", "data"}
    assert (verdict.kind.value, verdict.time_shape.value) == ("poison", "burst")
    assert verdict.receive_counts == ((4, 40),) and verdict.kept_reasons == (("MalformedOrderError", 40),)
    assert figures.evidence(verdict) == [
        "40 messages sent Sun 18 22:04 to Sun 18 23:51: a burst",
        "receive counts 4 x40",
        "content: 40/40 say 'version 2, this consumer expects 1'",
        "kept reason: MalformedOrderError x40",
    ]


def test_the_dlq_pattern_needs_no_world():
    script = "import sys, mercadofresco.patterns.dlq; assert 'mercadofresco.world' not in sys.modules"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    with mock_aws():
        cloudwatch = boto3.client("cloudwatch", region_name="eu-south-2")
        topic = "arn:aws:sns:eu-south-2:123456789012:alertas-mercadofresco"
        dlq.define_alarms(cloudwatch, topic, "cola-tienda-fallidos")
        found = cloudwatch.describe_alarms()["MetricAlarms"]
    assert {a["AlarmName"]: a["AlarmActions"] for a in found} == {
        "cola-tienda-fallidos-mensajes": [topic],
        "cola-tienda-fallidos-antiguedad": [topic],
    }


def test_reason_is_kept_with_the_message(aws, kinds):
    sample = dlq.inspect(aws.sqs, kinds["rafaga-transitoria"].dlq_url, max_messages=3)
    assert sample[0].reason == dlq.FailureReason(
        "GatewayUnavailableError", "503 Service Unavailable", "1.4.0", 4, world.ORDERS_QUEUE
    )


def test_alarms_fire_by_count_after_5_minutes_and_by_age_after_an_hour(aws, clock):
    dlq.define_alarms(aws.client("cloudwatch"), aws.alerts_topic_arn)
    pair = aws.orders
    reason = dlq.FailureReason("GatewayUnavailableError", "503", "1.4.0", 4, world.ORDERS_QUEUE)
    dlq.dead_letter_copy(aws.sqs, pair.dlq_url, "{}", reason, int(clock.timestamp() * 1000))
    start = clock.now()
    states = {}
    for minutes in (5, 55, 65):
        clock.advance_to(start + dt.timedelta(minutes=minutes))
        states[minutes] = alarm_evaluation.check_dlq_alarms(aws, pair.dlq_url, clock.now())
    assert states[5] == {"visible": 1, "oldest_minutes": 5.0, "count": "ALARM", "age": "OK"}
    assert states[55]["age"] == "OK" and states[65]["age"] == "ALARM"
    assert alarms.state_of(aws.client("cloudwatch"), f"{world.ORDERS_DLQ}-antiguedad") == "ALARM"


def test_discard_keeps_a_record_and_refuses_without_a_reason(aws, clock, kinds):
    url = kinds["goteo-datos"].dlq_url
    victim = dlq.inspect(aws.sqs, url, max_messages=1)[0]
    with pytest.raises(dlq.DiscardRefusedError):
        dlq.discard(aws.sqs, url, {victim.message_id}, who="marta", why="", now=clock.now())
    clock.advance(6)
    records = dlq.discard(aws.sqs, url, {victim.message_id}, "marta", "importe negativo del integrador", clock.now())
    assert records[0]["quien"] == "marta" and records[0]["cuerpo"] == victim.body
    clock.advance(31)
    left = bodies(aws, url)
    assert victim.body not in left and len(left) == kinds["goteo-datos"].count - 1


def test_redrive_of_340_at_10_per_second_takes_34_virtual_seconds_and_loses_none(aws, clock):
    incident = incidents.seed_exercise2_incident(aws, clock, seed=2)
    task = move_task.start_message_move_task(aws.sqs, clock, incident.dlq_url, incident.source_url, 10)
    assert task.approximate_number_of_messages_moved == 340
    assert (task.status, task.failure_reason) == ("COMPLETED", None)
    assert task.duration_seconds >= 34
    assert task.max_moved_in_any_second() <= 10
    assert queues.queue_counts(aws.sqs, incident.dlq_url)["visible"] == 0
    moved = {orders.parse_order(b, 2).pedido_id for b in bodies(aws, incident.source_url) if '"version": 2' in b}
    assert moved == set(incident.pedido_ids)


def test_redrive_can_move_a_single_message(aws, clock):
    incident = incidents.seed_exercise2_incident(aws, clock, seed=3, count=30)
    one = dlq.inspect(aws.sqs, incident.dlq_url, max_messages=30)[17]
    clock.advance(6)
    task = move_task.start_message_move_task(
        aws.sqs, clock, incident.dlq_url, incident.source_url, 10, {one.message_id}
    )
    assert task.approximate_number_of_messages_moved == 1
    clock.advance(31)
    assert len(bodies(aws, incident.dlq_url)) == 29 and one.body not in bodies(aws, incident.dlq_url)


class RefusingSqs:
    """A test double: moto's client, except that send_message_batch refuses the bodies containing `refused`."""

    def __init__(self, sqs, refused):
        self.sqs, self.refused = sqs, refused

    def __getattr__(self, name):
        return getattr(self.sqs, name)

    def send_message_batch(self, QueueUrl, Entries):  # boto3 calls it with these names
        accepted = [e for e in Entries if self.refused not in e["MessageBody"]]
        answer = self.sqs.send_message_batch(QueueUrl=QueueUrl, Entries=accepted) if accepted else {}
        failed = [{"Id": e["Id"], "Code": "InternalError", "SenderFault": False} for e in Entries if e not in accepted]
        return {"Successful": answer.get("Successful", []), "Failed": failed}


def test_a_refused_send_stays_in_the_dlq_and_fails_the_task(aws, clock):
    incident = incidents.seed_exercise2_incident(aws, clock, seed=5, count=12)
    victim = incident.pedido_ids[3]
    task = move_task.start_message_move_task(
        RefusingSqs(aws.sqs, victim), clock, incident.dlq_url, incident.source_url, 10
    )
    assert task.status == "FAILED" and "1 message(s) could not be sent" in task.failure_reason
    assert list(task.failed_sends.values()) == ["InternalError"]
    assert task.approximate_number_of_messages_moved == 11
    clock.advance(31)
    left = bodies(aws, incident.dlq_url)
    assert len(left) == 1 and victim in left[0]  # not deleted: nothing lost


def test_a_chosen_message_that_is_not_there_fails_the_task(aws, clock):
    incident = incidents.seed_exercise2_incident(aws, clock, seed=6, count=5)
    task = move_task.start_message_move_task(aws.sqs, clock, incident.dlq_url, incident.source_url, 10, {"no-such-id"})
    assert (task.status, task.not_found) == ("FAILED", {"no-such-id"})
    assert task.failure_reason == "1 chosen message(s) not found in the DLQ"
    assert task.approximate_number_of_messages_moved == 0


def run_consumer(aws, clock, versions, incident):
    client = gateway.GatewayClient(gateway.PaymentGateway(clock))
    return redrive.consume(aws.sqs, incident.source_url, clock, client, versions), client.gateway


def test_redrive_without_the_fix_sends_the_messages_back(aws, clock):
    incident = incidents.seed_exercise2_incident(aws, clock, seed=4, count=20)
    task = move_task.start_message_move_task(aws.sqs, clock, incident.dlq_url, incident.source_url, 10)
    poller, provider = run_consumer(aws, clock, (1,), incident)
    assert redrive.deleted_count(poller) == 1  # only the healthy version-1 order
    assert queues.queue_counts(aws.sqs, incident.dlq_url)["visible"] == 20
    assert not move_task.verify(aws.sqs, incident.dlq_url, task, redrive.deleted_count(poller))["ok"]
    task = move_task.start_message_move_task(aws.sqs, clock, incident.dlq_url, incident.source_url, 10)
    poller, provider = run_consumer(aws, clock, (1, 2), incident)  # the fix: read version 2 too
    check = move_task.verify(aws.sqs, incident.dlq_url, task, redrive.deleted_count(poller))
    assert check == {"moved": 20, "deleted_by_consumer": 20, "left_in_dlq": 0, "ok": True}
    assert set(provider.charges_per_order().values()) == {1}


def test_rate_must_be_within_sqs_limits(aws, clock):
    with pytest.raises(ValueError, match="max_number_of_messages_per_second"):
        move_task.start_message_move_task(aws.sqs, clock, aws.orders.dlq_url, aws.orders.url, 501)


def test_version2_body_is_what_the_fixed_consumer_reads():
    assert orders.parse_order(incidents.version2_body("PED-2026-000001", Decimal("1.00")), 2).version == 2


def test_pacing_matches_the_lesson_and_the_move_task():
    assert move_task.pacing_seconds(340, 10) == 34
    assert move_task.pacing_seconds(10_000, 500) == 20


def test_redrive_into_a_non_idempotent_consumer_duplicates_charges(aws, clock):
    naive = redrive.redrive_after_lost_responses(aws, clock, 5, send_idempotency_key=False)
    keyed = redrive.redrive_after_lost_responses(aws, clock, 5, send_idempotency_key=True)
    assert naive["in_dlq_before_redrive"] == keyed["in_dlq_before_redrive"] == 5
    assert (naive["charges"], naive["orders_charged_twice"]) == (10, 5)
    assert (keyed["charges"], keyed["orders_charged_twice"]) == (5, 0)


def test_41200_at_once_overwhelms_the_database_paced_batches_do_not():
    at_once = mass_redrive.run_mass_redrive(mass_redrive.MassRedriveConfig())
    paced = mass_redrive.run_mass_redrive(mass_redrive.MassRedriveConfig(release="paced", max_concurrency=40))
    assert at_once.back_in_dlq > 1_000 and at_once.processed + at_once.back_in_dlq == 41_200
    assert paced.failed_attempts == 0 and paced.processed == 41_200
    assert 5 <= paced.finished_seconds / 60 <= 7  # class 210: about 6 minutes at ~120 messages/s
    assert max(row.db_connections for row in paced.timeline) <= 40
    with pytest.raises(ValueError, match="release"):
        mass_redrive.MassRedriveConfig(release="yolo")


def test_class_210s_ramp_is_beyond_what_an_sqs_mapping_documents():
    standard, provisioned = lambda_scaling.MODES["standard"], lambda_scaling.MODES["provisioned"]
    assert standard.concurrency_after(40) == 205  # 5 + 300 a minute x 40 s
    assert standard.seconds_to_reach(2_800) is None and standard.concurrency_after(3_600) == 1_000
    assert round(provisioned.seconds_to_reach(2_800)) == 167
    assert round(lambda_scaling.per_minute_needed(2_800, 40)) == 4_192  # 14 x the standard mode's 300
    rows = {row["ramp"]: row for row in redrive.ramp_rows()}
    assert rows["standard mode"]["seconds_to_2800"] == "never (ceiling)"
    assert rows["provisioned mode"]["after_40_s"] == 686


def test_the_hasty_redrive_at_a_documented_ramp_sends_fewer_back_than_class_210s_ramp():
    def hasty(scaling: str) -> mass_redrive.MassRedriveResult:
        limit = 1_000 if scaling == "standard" else 2_800  # standard mode never runs more than 1,000 at once
        return mass_redrive.run_mass_redrive(mass_redrive.MassRedriveConfig(max_concurrency=limit, scaling=scaling))

    stated, standard, provisioned = hasty("as_stated"), hasty("standard"), hasty("provisioned")
    assert (stated.back_in_dlq, standard.back_in_dlq, provisioned.back_in_dlq) == (15_110, 0, 1_970)
    assert standard.failed_attempts > 10_000  # the database still refuses, but every batch gets through in 5 receives
    assert standard.consumers_started <= 1_000 and provisioned.peak_at(40) <= 686
    for result in (stated, standard, provisioned):
        assert result.processed + result.back_in_dlq == 41_200


def test_reserved_concurrency_throttles_where_maximum_concurrency_waits():
    maximum = mass_redrive.run_mass_redrive(
        mass_redrive.MassRedriveConfig(release="paced", max_concurrency=40, scaling="standard")
    )
    reserved = mass_redrive.run_mass_redrive(
        mass_redrive.MassRedriveConfig(
            release="paced", max_concurrency=1_000, scaling="standard", reserved_concurrency=40
        )
    )
    assert maximum.throttled_batches == 0 and maximum.consumers_started == 40
    assert reserved.throttled_batches > 1_000 and reserved.consumers_started > 40  # the mapping kept scaling
    assert reserved.processed == maximum.processed == 41_200
    assert reserved.finished_seconds > maximum.finished_seconds + 60  # throttled batches wait out their visibility
    with pytest.raises(ValueError, match="scaling"):
        mass_redrive.MassRedriveConfig(scaling="instant")


def test_the_fixed_consumer_reads_both_versions_the_old_one_says_why_not():
    body = incidents.version2_body("PED-2026-000002", Decimal("9.99"))
    assert handlers.read_order(body, (1, 2)).version == 2
    with pytest.raises(orders.MalformedOrderError, match="version 2, this consumer expects 1"):
        handlers.read_order(body, (1,))


def test_an_alarm_configuration_can_be_checked_against_the_exercise2_incident(aws, clock):
    incident = incidents.seed_exercise2_incident(aws, clock, seed=5, count=30)
    arrivals = [s.sent_at for s in dlq.inspect(aws.sqs, incident.dlq_url, max_messages=1000)]
    count_rule, age_rule = dlq.alarm_rules()
    fired = incidents.first_alarm_at(count_rule, arrivals, until=clock.now())
    assert fired.astimezone(incidents.MADRID).strftime("%a %H:%M") == "Sun 22:09"
    aged = incidents.first_alarm_at(age_rule, arrivals, until=clock.now())
    assert aged.astimezone(incidents.MADRID).strftime("%a %H:%M") == "Sun 23:09"
    too_lax = alarms.AlarmRule("laxa", "AWS/SQS", "ApproximateNumberOfMessagesVisible", threshold=400)
    assert incidents.first_alarm_at(too_lax, arrivals, until=clock.now()) is None


def test_the_problem_kind_comes_from_the_parser_not_from_its_wording(aws, clock):
    pair = aws.reset_orders_queue()
    for body in (
        '{"pedido_id": "84417", "importe": "48.20", "version": 1}',  # a malformed id: the shape is wrong
        '{"pedido_id": "PED-2026-084417", "importe": "-1", "version": 1}',  # a well-formed order, impossible amount
    ):
        aws.sqs.send_message(QueueUrl=pair.dlq_url, MessageBody=body)
    samples = dlq.inspect(aws.sqs, pair.dlq_url)
    assert {s.problem: s.problem_kind for s in samples} == {
        "pedido_id '84417' is not like PED-2026-084417": "schema",
        "importe '-1' must be a positive amount": "value",
    }


def test_give_up_keeps_the_reason_and_the_send_time(aws, clock):
    aws.sqs.send_message(QueueUrl=aws.orders.url, MessageBody='{"version": 3}')
    sent = aws.sqs.receive_message(QueueUrl=aws.orders.url, WaitTimeSeconds=0, MessageSystemAttributeNames=["All"])
    message = sent["Messages"][0]
    reason = dlq.FailureReason("MalformedOrderError", "version 3", "v1.4", 1, "cola-mercadofresco-pedidos")
    clock.advance(600)
    dlq.give_up(aws.sqs, message, aws.orders.url, aws.orders.dlq_url, reason)
    assert queues.queue_counts(aws.sqs, aws.orders.url) == {"visible": 0, "in_flight": 0, "delayed": 0}
    (sample,) = dlq.inspect(aws.sqs, aws.orders.dlq_url, max_messages=5)
    assert sample.reason == reason
    assert sample.sent_at == clock.now() - dt.timedelta(seconds=600)  # the original send, not the copy's


def test_each_dlq_figure_says_its_numbers_and_reads_without_colour():
    from mercadofresco.clock import MADRID
    from mercadofresco.lessons.show.pictures import series
    from tests.notebooks.colour_vision import problems

    start = dt.datetime(2026, 10, 18, 22, 0, tzinfo=MADRID)  # a Sunday

    def sample(minutes: float) -> dlq.Sample:
        return dlq.Sample("m", "{}", start + dt.timedelta(minutes=minutes), 1, None, None, None)

    burst, drip = [sample(m) for m in (0, 5, 12)], [sample(60 * h) for h in (0, 24, 48, 72)]
    arrivals = figures.arrivals({"rafaga": burst, "goteo": drip}, "two DLQs")
    assert arrivals.alt.startswith("two DLQs. ")
    assert "rafaga: 3 messages, sent Sun 18 22:00 to Sun 18 22:12 (12 min)" in arrivals.alt
    assert "goteo: 4 messages, sent Sun 18 22:00 to Wed 21 22:00 (72 h)" in arrivals.alt

    rows = [
        {"at": start + dt.timedelta(minutes=5 * i), "visible": 2 + 3 * i, "oldest_minutes": 25.0 * i,
         "count": "ALARM" if i >= 1 else "OK", "age": "ALARM" if 25 * i > 60 else "OK"}
        for i in range(5)
    ]  # fmt: skip
    timeline = figures.alarm_timeline(rows)
    assert "the messages go from 2 to 14, the oldest from 0 to 100 min against the 60 min line" in timeline.alt
    assert "the count alarm went to ALARM at 22:05 (5 messages)" in timeline.alt
    assert "the age alarm went to ALARM at 22:15 (oldest 75 min)" in timeline.alt

    configs = [mass_redrive.MassRedriveConfig(messages=5_000), mass_redrive.MassRedriveConfig(
        messages=5_000, release="paced", max_concurrency=40)]  # fmt: skip
    results = [mass_redrive.run_mass_redrive(config) for config in configs]
    redrive = figures.mass_redrive(results)
    for result in results:
        most = max(row.db_connections for row in result.timeline)
        said = f"{figures.redrive_label(result.config)}: at most {most:,} connections, "
        said += f"{result.failed_attempts:,} failed attempts, {result.back_in_dlq:,} back in the DLQ"
        assert said in redrive.alt
    for picture in (arrivals, timeline, redrive):
        assert problems(series(picture.figure)) == [], picture.alt
