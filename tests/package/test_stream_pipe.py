"""The Streams answer operated (notebook 13): the 24-hour trim, duplicates from the pipe, the DLQ, the lag alarm.

moto keeps stream records forever and moves nothing through Pipes; `models.stream_pipe` is the model,
and these tests hold the numbers notebook 13 prints.
"""

from __future__ import annotations

import datetime as dt

from mercadofresco.lessons.outbox import pipe_operations, streams
from mercadofresco.models import stream_pipe


def test_moto_keeps_a_stream_record_longer_than_24_hours_so_the_trim_is_the_model(aws, clock):
    arn = streams.create_carts_table(aws.dynamodb)
    pipe = pipe_operations.create_pipe(aws, arn)
    pipe_operations._abandon(aws, 1)
    clock.advance(25 * 3600)
    assert len(pipe._records()) == 1  # moto still serves it
    assert pipe.unread(clock.now()) == [] and len(pipe.expired) == 1  # the model trims it


def test_a_pipe_stopped_longer_than_the_retention_loses_carts_and_a_short_stop_loses_none(aws, clock):
    short = pipe_operations.stopped_pipe(aws, clock, pipe_operations.PipeOutage(down_hours=6))
    long = pipe_operations.stopped_pipe(aws, clock, pipe_operations.PipeOutage(down_hours=30))
    assert short["lost"] == 0 and short["carts announced"] == short["carts written"] == 36
    assert long["lost"] == 9 and long["carts announced"] == 27
    assert max(row["age_hours"] for row in long["rows"]) <= 24.0  # nothing older survives the trim
    assert short["announced twice"] == 9 and long["announced twice"] == 7  # at least once
    for run in (short, long):
        assert run["lag alarm at hour"] == 3.0 and run["rows"][-1]["alarm"] == "OK"


def test_a_refused_record_blocks_its_shard_for_a_day_unless_the_pipe_has_a_retry_limit_and_a_dlq(aws, clock):
    forever = pipe_operations.poison_record(aws, clock, retries=-1)
    limited = pipe_operations.poison_record(aws, clock, retries=3)
    assert forever["longest wait behind it (h)"] == 24 and forever["refused cart lost (trimmed)"] == 1
    assert forever["refused cart to the DLQ"] == 0
    assert limited["longest wait behind it (h)"] == 2 and limited["refused cart to the DLQ"] == 1
    assert limited["refused cart lost (trimmed)"] == 0 and limited["carts behind it delivered"] == "6 of 6"


def test_the_pipe_reads_its_settings_and_state_from_motos_pipes_api(aws, clock):
    pipe = pipe_operations.create_pipe(aws, streams.create_carts_table(aws.dynamodb), retries=5, batch_size=4)
    parameters = pipe.describe()["SourceParameters"]["DynamoDBStreamParameters"]
    assert parameters["MaximumRetryAttempts"] == 5 and parameters["BatchSize"] == 4
    assert parameters["DeadLetterConfig"]["Arn"].endswith(pipe_operations.PIPE_DLQ)
    for n in range(1, 4):
        pipe_operations._abandon(aws, n)
    pipe.pipes.stop_pipe(Name=pipe.name)
    clock.advance(3600)
    assert pipe.poll(clock.now()) == 0 and pipe.iterator_age_seconds(clock.now()) == 3600
    pipe.pipes.start_pipe(Name=pipe.name)
    assert pipe.poll(clock.now()) == 3 and pipe.iterator_age_seconds(clock.now()) == 0
    assert dt.timedelta(hours=24).total_seconds() == stream_pipe.RETENTION_SECONDS
