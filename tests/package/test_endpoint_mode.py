"""Endpoint mode: the same experiments against a moto server in this process (virtual time) and in another
process (real time, or a clear refusal); what a world creates outside the process goes away."""

import json
import logging
import signal
import sys
from pathlib import Path

import pytest
from moto.server import ThreadedMotoServer

from mercadofresco import queues, world
from mercadofresco.lessons.delivery import experiments as delivery
from mercadofresco.runtime import settings
from mercadofresco.runtime.settings import EndpointConfig
from tests.package import endpoint_sweep
from tests.scheduling import Background

logging.getLogger("werkzeug").setLevel(logging.ERROR)


@pytest.fixture
def server_world(clock):
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        config = world.WorldConfig(endpoint=EndpointConfig(mode="endpoint", endpoint_url=f"http://{host}:{port}"))
        with world.build(config) as built:
            yield built
    finally:
        server.stop()


def test_notebook_01_experiments_run_against_a_moto_server(server_world, clock):
    assert server_world.sqs.meta.endpoint_url.startswith("http://127.0.0.1:")
    assert server_world._mock is None  # nothing is mocked in this process: it is all HTTP
    six = delivery.six_steps(server_world, clock)
    assert six.charges_per_order() == {"PED-2026-084417": 2}
    slow = delivery.slow_gateway(server_world, clock)
    assert len(slow.ledger) == 2
    assert [r["detail"] for r in slow.timeline if r["event"] == "received"] == ["receive #1", "receive #2"]


def test_endpoint_mode_via_environment(monkeypatch, clock):
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        monkeypatch.setenv("MERCADOFRESCO_MODE", "endpoint")
        monkeypatch.setenv("MERCADOFRESCO_ENDPOINT_URL", f"http://{host}:{port}")
        with world.build() as built:
            assert built.config.endpoint.mode == "endpoint"
            assert queues.queue_counts(built.sqs, built.orders.url)["visible"] == 0
    finally:
        server.stop()


def test_fifty_parallel_duplicates_across_two_processes_sharing_a_moto_server(server_world):
    """25 threads in each of two processes, one moto server: one charge in total, 50 identical answers."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    url = server_world.sqs.meta.endpoint_url
    child = Path(__file__).with_name("parallel_child.py")
    processes = [
        subprocess.Popen([sys.executable, str(child), url, "25"], stdout=subprocess.PIPE, text=True) for _ in range(2)
    ]
    results = [json.loads(process.communicate(timeout=120)[0]) for process in processes]
    assert all(process.returncode == 0 for process in processes)
    assert sum(result["charges"] for result in results) == 1
    answers = [answer for result in results for answer in result["answers"]]
    assert len(answers) == 50 and len(set(answers)) == 1


# -- a server in another process keeps real time: the clock keeps its pace, or refuses -------------------
import _thread  # noqa: E402
import datetime as dt  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from mercadofresco.clock import LESSON_START, VirtualClock  # noqa: E402
from mercadofresco.lessons import rehearsal  # noqa: E402
from mercadofresco.models import gateway  # noqa: E402
from mercadofresco.runtime import cleanup, cleanup_cli, realtime  # noqa: E402
from tests.moto_process import moto_server_process  # noqa: E402


@pytest.fixture(scope="module")
def outside_url():
    """A moto server in its own process, like `moto_server -p 5000` in a learner's terminal."""
    with moto_server_process() as url:
        yield url


def real_pace(url: str, budget: float = 60) -> realtime.Pace:
    return realtime.Pace(real=True, mode="endpoint", where=f"the endpoint {url}", budget_seconds=budget)


def test_the_clock_reads_its_pace_from_the_mode(monkeypatch, outside_url):
    inside = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    inside.start()
    try:
        host, port = inside.get_host_and_port()
        monkeypatch.setenv("MERCADOFRESCO_MODE", "endpoint")
        monkeypatch.setenv("MERCADOFRESCO_ENDPOINT_URL", f"http://{host}:{port}")
        with VirtualClock() as clock:  # a server in this process reads the patched time
            assert not clock.real_time
        monkeypatch.setenv("MERCADOFRESCO_ENDPOINT_URL", outside_url)
        with VirtualClock() as clock:  # one in another process does not
            assert clock.real_time and clock.pace.where == f"the endpoint {outside_url}"
        monkeypatch.delenv("MERCADOFRESCO_MODE")
        with VirtualClock() as clock:
            assert clock.pace == realtime.VIRTUAL
    finally:
        inside.stop()


def test_real_pace_waits_for_real_and_still_shows_the_lessons_instants(capsys, outside_url):
    with VirtualClock(pace=real_pace(outside_url)) as clock:
        assert "keeps its own, real time" in capsys.readouterr().err  # the notice, in the first cell
        started = time.monotonic()
        assert clock.advance(0.6) == LESSON_START + dt.timedelta(seconds=0.6)
        assert 0.55 <= time.monotonic() - started < 3


def test_six_steps_scaled_down_charge_twice_against_a_server_in_another_process(outside_url):
    """Notebook 01's experiment with a 4 s visibility timeout instead of 120 s: the same two charges, for real."""
    with (
        VirtualClock(pace=real_pace(outside_url)) as clock,
        world.build(world.WorldConfig(endpoint=EndpointConfig(mode="endpoint", endpoint_url=outside_url))) as aws,
    ):
        aws.reset_orders_queue(visibility_timeout_seconds=4)  # what six_steps does, with 4 s for 120 s
        provider = gateway.PaymentGateway(clock)
        provider.fail_next(gateway.Fault.RESPONSE_LOST)
        client = gateway.GatewayClient(provider, read_timeout_seconds=180, send_idempotency_key=False)
        started = time.monotonic()
        run = delivery.run_orders(aws, clock, client, [delivery.INCIDENT_ORDER], max_seconds=10)
        assert time.monotonic() - started >= 4  # the visibility timeout passed for real
    assert run.charges_per_order() == {"PED-2026-084417": 2}
    assert run.summary()["left_in_queue"] == 0
    received = [(r["seconds"], r["detail"]) for r in run.timeline if r["event"] == "received"]
    assert [detail for _, detail in received] == ["receive #1", "receive #2"]
    # in process the second receive is at 4.24 s; in real time the machine's load adds a little
    assert received[0][0] == 0.0 and 4.0 <= received[1][0] < 6.0, received


def test_a_virtual_clock_against_a_server_in_another_process_gets_the_wrong_answer(outside_url):
    """What the issue saw: the server never sees the clock move, the message never comes back, one charge."""
    with (
        VirtualClock(pace=realtime.VIRTUAL) as clock,
        world.build(world.WorldConfig(endpoint=EndpointConfig(mode="endpoint", endpoint_url=outside_url))) as aws,
    ):
        aws.reset_orders_queue(visibility_timeout_seconds=4)
        provider = gateway.PaymentGateway(clock)
        provider.fail_next(gateway.Fault.RESPONSE_LOST)
        client = gateway.GatewayClient(provider, read_timeout_seconds=180, send_idempotency_key=False)
        run = delivery.run_orders(aws, clock, client, [delivery.INCIDENT_ORDER], max_seconds=10)
    assert len(run.ledger) == 1 and run.summary()["left_in_queue"] == 1


def test_an_experiment_that_cannot_fit_refuses_before_waiting(outside_url):
    with (
        VirtualClock(pace=real_pace(outside_url, budget=30)) as clock,
        world.build(world.WorldConfig(endpoint=EndpointConfig(mode="endpoint", endpoint_url=outside_url))) as aws,
    ):
        started, before = time.monotonic(), clock.now()
        with pytest.raises(realtime.RealTimeRefusedError) as refused:
            delivery.fifo_window(aws, clock, gap_seconds=360)  # FIFO's 5-minute window, waited out
        assert time.monotonic() - started < 2 and clock.now() == before  # nothing waited, the clock did not move
    message = str(refused.value)
    for part in ("360 s of real time", "mode 'endpoint'", outside_url, "30 s left of 30 s", "unset MERCADOFRESCO_MODE"):
        assert part in message
    assert isinstance(refused.value, realtime.MercadoFrescoError)


def test_the_budget_counts_every_wait_and_a_declared_need_refuses_up_front(outside_url):
    with VirtualClock(pace=real_pace(outside_url, budget=1)) as clock:
        clock.advance(0.6)
        with pytest.raises(realtime.RealTimeRefusedError, match=r"0\.4 s left of 1 s"):
            clock.need(4 * 86_400, "the 4-day retention")
        with pytest.raises(realtime.RealTimeRefusedError, match=r"advancing the clock 0\.5 s"):
            clock.advance(0.5)
    with VirtualClock(pace=realtime.VIRTUAL) as clock:
        clock.need(4 * 86_400, "the 4-day retention")  # in process it costs nothing


def test_a_learner_can_interrupt_a_real_wait(outside_url):
    # interrupt_main does nothing while SIGINT is ignored or default, as a library run earlier in this process may
    # have left it (the suite lost this interrupt once, 2026-12-06); Jupyter's kernel keeps Python's own handler.
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _interrupt_a_real_wait(outside_url)
    finally:
        signal.signal(signal.SIGINT, handler)


def _interrupt_a_real_wait(outside_url):
    with VirtualClock(pace=real_pace(outside_url)) as clock:
        threading.Timer(0.3, _thread.interrupt_main).start()
        started, before = time.monotonic(), clock.now()
        with pytest.raises(KeyboardInterrupt):
            clock.advance(30)
        assert time.monotonic() - started < 2 and clock.now() == before


def test_in_aws_mode_the_clock_shows_real_time_and_refuses_the_lessons_fixed_instants():
    pace = realtime.Pace(real=True, mode="aws", where="real AWS", budget_seconds=60, follows_wall=True)
    with VirtualClock(pace=pace) as clock:  # AWS checks each request's signature time: no time travel
        assert abs((clock.now() - dt.datetime.fromtimestamp(realtime.wall_time(), dt.UTC)).total_seconds()) < 2
        with pytest.raises(realtime.RealTimeRefusedError, match="an instant of the lesson's calendar"):
            clock.advance_to(LESSON_START + dt.timedelta(days=3))  # Monday 09:00 is in the past


def test_a_bad_budget_names_the_variable(monkeypatch):
    monkeypatch.setenv(realtime.BUDGET_VARIABLE, "ten minutes")
    with pytest.raises(realtime.MercadoFrescoError, match="MERCADOFRESCO_REAL_TIME_BUDGET_SECONDS must be a number"):
        settings.read()
    monkeypatch.setenv(realtime.BUDGET_VARIABLE, "-5")
    with pytest.raises(realtime.MercadoFrescoError, match="between 0 and 86400"):
        settings.read()


# -- what a world creates outside this process goes away -------------------------------------------------
def test_close_deletes_what_the_world_and_its_experiments_created(outside_url, clock):
    aws = world.build(world.WorldConfig(endpoint=EndpointConfig(mode="endpoint", endpoint_url=outside_url)))
    table = aws.client("dynamodb").create_table(  # an experiment's own resource, made through the world's client
        TableName="mercadofresco-stock-prueba",
        KeySchema=[{"AttributeName": "sku", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "sku", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )["TableDescription"]["TableName"]
    tagged = cleanup.find_tagged(aws.client, aws.ledger.run_id)
    assert ("table", table) in tagged and len(tagged) == 13  # 6 queues... every one carries the run's tag
    gone = aws.close()
    assert len(gone) == 13 and cleanup.find_tagged(aws.client) == []
    assert aws.sqs.list_queues().get("QueueUrls", []) == []


def test_the_cleanup_command_lists_then_deletes_what_a_cut_off_run_left(outside_url, clock, capsys):
    world.build(
        world.WorldConfig(endpoint=EndpointConfig(mode="endpoint", endpoint_url=outside_url))
    )  # never closed: the run was cut off
    args = ["--mode", "endpoint", "--endpoint-url", outside_url]
    cleanup_cli.main(args)
    listed = capsys.readouterr().out
    assert "would delete table mercadofresco-idempotencia" in listed and "--yes" in listed
    cleanup_cli.main([*args, "--yes"])
    assert "deleted queue" in capsys.readouterr().out
    cleanup_cli.main(args)
    assert "nothing tagged mercadofresco-workbook" in capsys.readouterr().out


def test_aws_mode_says_what_it_will_create_and_refuses_names_it_did_not_make(monkeypatch, capsys):
    import boto3
    from moto import mock_aws

    with mock_aws():  # stands in for an account: world.build in aws mode talks to "AWS" here
        config = world.WorldConfig(endpoint=EndpointConfig(mode="aws", allow_real_aws=True))
        mine = world.build(config)
        plan = capsys.readouterr().err
        assert "about to create these resources in eu-south-2" in plan and "$1 per month" in plan
        assert f"mercadofresco-workbook={mine.ledger.run_id}" in plan
        assert len(mine.close()) == 12
        learners = boto3.client("sqs", region_name=config.endpoint.region)
        learners.create_queue(QueueName=world.ORDERS_QUEUE)  # the learner's own queue, same name, no tag
        with pytest.raises(cleanup.NameInUseError, match="queue cola-mercadofresco-pedidos that the workbook"):
            world.build(config)
        assert [url.rsplit("/", 1)[1] for url in learners.list_queues()["QueueUrls"]] == [world.ORDERS_QUEUE]


# -- every notebook against a server in another process: the same answer, or a clear refusal (endpoint_sweep.py)
# tests/scheduling.py starts it early; run from the repository, as a module of the tests package
STARTED_EARLY = Background(
    sys.executable, "-m", "tests.package.endpoint_sweep", cwd=Path(__file__).resolve().parents[2]
)


def test_every_notebook_outside_the_process_gives_the_same_answer_or_refuses_clearly():
    """Strict about text: every cell before a refusal prints what the committed notebook prints."""
    status, output, errors = STARTED_EARLY.result()
    assert status == 0, errors[-3000:]
    verdicts = json.loads(output)
    assert len(verdicts) == len(endpoint_sweep.NOTEBOOKS)
    wrong = [v for v in verdicts if v["verdict"] not in ("same", "refused")]
    assert not wrong, wrong
    for verdict in verdicts:
        if verdict["verdict"] == "refused":
            assert "unset MERCADOFRESCO_MODE" in verdict["detail"] and "mode 'endpoint'" in verdict["detail"]


def test_a_real_aws_url_is_never_probed_for_its_time(monkeypatch):
    import urllib.request

    asked = []

    def urlopen(url, **kwargs):
        asked.append(url)
        raise OSError("no server here")

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    monkeypatch.setenv("MERCADOFRESCO_MODE", "endpoint")
    for url, probed in [("https://sqs.eu-south-2.amazonaws.com", []), ("http://127.0.0.1:9", ["http://127.0.0.1:9"])]:
        asked.clear()
        monkeypatch.setenv("MERCADOFRESCO_ENDPOINT_URL", url)
        pace = realtime.pace_from_env(dt.datetime(2026, 10, 16, 19, 14, tzinfo=dt.UTC))
        assert pace.real and asked == probed  # the guard can fail: a local URL is asked


def test_a_wrong_endpoint_setting_names_the_variable_and_the_way_back(monkeypatch):
    monkeypatch.setenv("MERCADOFRESCO_MODE", "endpoint")
    monkeypatch.setenv("MERCADOFRESCO_ENDPOINT_URL", "127.0.0.1:5055")  # no scheme
    with pytest.raises(
        settings.EndpointConfigError, match=r"must start with http:// or https://.*MERCADOFRESCO_ENDPOINT_URL"
    ):
        world.WorldConfig.from_env()
    monkeypatch.setenv("MERCADOFRESCO_MODE", "endpiont")
    with pytest.raises(
        settings.EndpointConfigError, match=r"got 'endpiont' \(read from MERCADOFRESCO_MODE.*unset both"
    ):
        world.WorldConfig.from_env()


def test_an_endpoint_where_nothing_answers_says_so():
    started = time.monotonic()
    with pytest.raises(world.WorldConfigError, match=r"nothing answers at http://127\.0\.0\.1:9: start a server"):
        world.build(world.WorldConfig(endpoint=EndpointConfig(mode="endpoint", endpoint_url="http://127.0.0.1:9")))
    assert time.monotonic() - started < 30


def test_an_experiment_of_many_waits_declares_its_whole_need_before_it_starts(outside_url):
    """Notebook 01's latency sweep: five runs of short waits. It once waited a minute, then refused a 1 s step."""
    with (
        VirtualClock(pace=real_pace(outside_url, budget=120)) as clock,
        world.build(world.WorldConfig(endpoint=EndpointConfig(mode="endpoint", endpoint_url=outside_url))) as aws,
    ):
        started, before = time.monotonic(), clock.now()
        with pytest.raises(realtime.RealTimeRefusedError) as refused:
            delivery.latency_sweep(aws, clock, [0.24, 20, 60, 150, 250], 120, 180)
        assert time.monotonic() - started < 10 and clock.now() == before  # rehearsed in process, nothing waited
    assert str(refused.value).startswith("the latency sweep would take ")
    assert "nothing has waited yet" in str(refused.value)
    with VirtualClock() as clock, world.build(world.WorldConfig()) as aws:  # in process: the same answer
        span = rehearsal.virtual_span(delivery.latency_sweep, clock, [0.24, 20], 120, 180)
        rows = delivery.latency_sweep(aws, clock, [0.24, 20], 120, 180)
        assert clock.seconds_since_start() == span and [row["charges_per_order"] for row in rows] == [1.0, 1.0]
    assert refused.value.seconds > 600  # the sweep's whole need, not one step of it


def test_a_declared_need_that_fits_is_said_before_it_starts(outside_url, capsys):
    with VirtualClock(pace=real_pace(outside_url, budget=60)) as clock:
        capsys.readouterr()
        clock.need(10, "the six-step double charge")
    assert (
        "the six-step double charge needs about 10 s of real time (60 s of the budget left)" in capsys.readouterr().err
    )
