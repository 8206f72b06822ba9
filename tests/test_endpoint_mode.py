"""The same experiments against a moto server: the world's code is endpoint-agnostic."""

import logging

import pytest
from moto.server import ThreadedMotoServer

from mercadofresco import delivery, world

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
            assert world.queue_counts(built.sqs, built.orders.url)["visible"] == 0
    finally:
        server.stop()
