"""The same experiments against a moto server: the world's code is endpoint-agnostic."""

import logging

import pytest
from moto.server import ThreadedMotoServer

from mercadofresco import queues, world
from mercadofresco.lessons import delivery

logging.getLogger("werkzeug").setLevel(logging.ERROR)


@pytest.fixture
def server_world(reloj):
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        config = world.WorldConfig(mode="endpoint", endpoint_url=f"http://{host}:{port}")
        with world.build(config) as built:
            yield built
    finally:
        server.stop()


def test_notebook_01_experiments_run_against_a_moto_server(server_world, reloj):
    assert server_world.sqs.meta.endpoint_url.startswith("http://127.0.0.1:")
    assert server_world._mock is None  # nothing is mocked in this process: it is all HTTP
    six = delivery.six_steps(server_world, reloj)
    assert six.charges_per_order() == {"PED-2026-084417": 2}
    slow = delivery.slow_gateway(server_world, reloj)
    assert len(slow.ledger) == 2
    assert [r["detail"] for r in slow.timeline if r["event"] == "received"] == ["receive #1", "receive #2"]


def test_endpoint_mode_via_environment(monkeypatch, reloj):
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        monkeypatch.setenv("MERCADOFRESCO_MODE", "endpoint")
        monkeypatch.setenv("MERCADOFRESCO_ENDPOINT_URL", f"http://{host}:{port}")
        with world.build() as built:
            assert built.config.mode == "endpoint"
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
