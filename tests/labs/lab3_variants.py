"""Lab 3 as learners might hand it in: the solution with one of the outbox's classic mistakes.

Each variant changes one idea of the solution (the lesson's sections 13 and 17). `EXPECTED_FAILURES`
names the hidden checks each must fail (at least).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.labs import lab_variants
import nbformat

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "solutions" / "lab3_outbox.ipynb"

SCHEMA, PUBLISHER, CONSUMER, OPERATE = "o06", "o10", "o14", "o18"
ENTRY = '{"Source": world.ORDER_SOURCE, "DetailType": "PedidoCreado", "Detail": detail, "EventBusName": world.BUS}'
INSERT_ORDER = (
    '    conn.execute("INSERT INTO pedidos (pedido_id, importe, creado_en) VALUES (%s, %s, %s)",'
    " (order.pedido_id, order.importe, now))\n"
)
DETAIL = '    detail = json.dumps({"pedido_id": order.pedido_id, "importe": str(order.importe)})\n'
OUTBOX_ROW = (
    'row = conn.execute("INSERT INTO outbox (tipo_agregado, agregado_id, tipo_evento, payload, creado_en)'
    " VALUES ('pedido', %s, 'PedidoCreado', %s, %s) RETURNING id\", (order.pedido_id, detail, now)).fetchone()\n"
)
# A publisher that marks every claimed row, whatever the bus answered; `per_call` entries a call.
PUBLISH = """    import contextlib

    with {block}:
        rows = conn.execute(CLAIM_SQL, (batch_size,)).fetchall()
        for start in range(0, len(rows), {per_call}):
            entries = [
                {{"Source": world.ORDER_SOURCE, "DetailType": tipo, "Detail": json.dumps({{**payload, "outbox_id": i}}),
                 "EventBusName": world.BUS}}
                for i, tipo, payload in rows[start : start + {per_call}]
            ]
            bus.put_events(Entries=entries)
        marked = [r[0] for r in rows]
        conn.execute("UPDATE outbox SET publicado = true, publicado_en = %s WHERE id = ANY(%s)", (now, marked))
    return len(rows)
"""

# Replacement bodies for whole solution regions: {variant: (cell id, function name, new body)}.
BODIES: dict[str, tuple[str, str, str]] = {
    # The 07-01 code the other way round: publish, then INSERT. A death in between announces a ghost.
    "publish_then_commit": (
        SCHEMA,
        "place_order",
        DETAIL + f"    bus.put_events(Entries=[{ENTRY}])\n" + INSERT_ORDER + "    return 0\n",
    ),
    # The 07-01 code itself: INSERT (committed on its own), then put_events. A death in between loses the event.
    "commit_then_publish": (
        SCHEMA,
        "place_order",
        DETAIL + INSERT_ORDER + f"    bus.put_events(Entries=[{ENTRY}])\n" + "    return 0\n",
    ),
    # The rows are marked published and committed first, then published: a death in between loses them.
    "mark_before_publish": (
        PUBLISHER,
        "publish_pending",
        "    with conn.transaction():\n"
        "        rows = conn.execute(CLAIM_SQL, (batch_size,)).fetchall()\n"
        '        conn.execute("UPDATE outbox SET publicado = true, publicado_en = %s WHERE id = ANY(%s)",'
        " (now, [r[0] for r in rows]))\n"
        "    for row_id, tipo_evento, payload in rows:\n"
        '        detail = json.dumps({**payload, "outbox_id": row_id})\n'
        '        bus.put_events(Entries=[{"Source": world.ORDER_SOURCE, "DetailType": tipo_evento,'
        ' "Detail": detail, "EventBusName": world.BUS}])\n'
        "    return len(rows)\n",
    ),
    # The dual write moved inside the database: the order and its event in two transactions.
    "two_transactions": (
        SCHEMA,
        "place_order",
        DETAIL
        + "    with conn.transaction():\n    "
        + INSERT_ORDER
        + "    with conn.transaction():\n        "
        + OUTBOX_ROW
        + "    return row[0]\n",
    ),
    # No transaction at all: each INSERT commits on its own (autocommit).
    "no_transaction": (SCHEMA, "place_order", DETAIL + INSERT_ORDER + "    " + OUTBOX_ROW + "    return row[0]\n"),
    # A publisher that reads PutEvents' answer as all-or-nothing: every row marked, the refused ones too.
    "ignores_failed_entries": (PUBLISHER, "publish_pending", PUBLISH.format(per_call=10, block="conn.transaction()")),
    # All the claimed rows in one put_events call: EventBridge takes 10 at most.
    "one_call_for_all": (PUBLISHER, "publish_pending", PUBLISH.format(per_call=1000, block="conn.transaction()")),
    # Claim, publish and mark without a transaction: the locks end with the claim, and two publishers meet.
    "publish_outside_transaction": (
        PUBLISHER,
        "publish_pending",
        PUBLISH.format(per_call=10, block="contextlib.nullcontext()"),
    ),
}

# Line edits: {variant: [(cell id, text in the solution, replacement)]}.
LINES: dict[str, list[tuple[str, str, str]]] = {
    # "FOR UPDATE" alone: the second publisher waits for the first one's rows.
    "no_skip_locked": [(PUBLISHER, "FOR UPDATE SKIP LOCKED", "FOR UPDATE")],
    # No lock at all: two publishers read the same rows.
    "no_lock": [(PUBLISHER, " FOR UPDATE SKIP LOCKED", "")],
    # A full index instead of a partial one.
    "no_partial_index": [
        (SCHEMA, "ON outbox (creado_en, id) WHERE NOT publicado", "ON outbox (creado_en, id)"),
        (
            SCHEMA,
            "ON outbox (agregado_id, creado_en, id) WHERE NOT publicado",
            "ON outbox (agregado_id, creado_en, id)",
        ),
    ],
    # Full indexes, and a partial index the claim never uses, named like the claim's alias: the plan's text holds
    # "outbox o" (an index was once found by its name anywhere in the plan's text, and this earned the point).
    "unused_partial_index_o": [
        (SCHEMA, "ON outbox (creado_en, id) WHERE NOT publicado", "ON outbox (creado_en, id)"),
        (
            SCHEMA,
            '"CREATE INDEX outbox_pendientes_por_pedido ON outbox (agregado_id, creado_en, id) WHERE NOT publicado",',
            '"CREATE INDEX outbox_pendientes_por_pedido ON outbox (agregado_id, creado_en, id)",\n'
            "    \"CREATE INDEX o ON outbox (tipo_agregado) WHERE tipo_agregado = 'ninguno'\",",
        ),
    ],
    # The cleanup deletes by age whether the row was published or not.
    "cleanup_unpublished": [
        (OPERATE, "DELETE FROM outbox WHERE publicado AND publicado_en < %s", "DELETE FROM outbox WHERE creado_en < %s")
    ],
    # The consumer keys by the order, so two different events of one order count as one.
    "dedup_by_pedido_id": [(CONSUMER, "detail['outbox_id']", "detail['pedido_id']")],
    # The lesson's claim as it reads: oldest first, SKIP LOCKED, and nothing that keeps an order's events in order.
    "claim_ignores_order": [
        (
            PUBLISHER,
            '    " AND NOT EXISTS (SELECT 1 FROM outbox antes WHERE NOT antes.publicado"\n'
            '    " AND antes.agregado_id = o.agregado_id AND (antes.creado_en, antes.id) < (o.creado_en, o.id))"\n',
            "",
        )
    ],
    # The backlog measured on the server's clock, not at the instant given.
    "backlog_server_clock": [
        (OPERATE, "(now - oldest).total_seconds()", "(dt.datetime.now(dt.UTC) - oldest).total_seconds()")
    ],
}

EXPECTED_FAILURES = {
    "publish_then_commit": {"order_and_event_together"},
    "commit_then_publish": {"order_and_event_together"},
    "two_transactions": {"order_and_event_together"},
    "no_transaction": {"order_and_event_together"},
    "mark_before_publish": {"publisher_deaths"},
    "ignores_failed_entries": {"partial_put_events"},
    "one_call_for_all": {"partial_put_events"},
    "publish_outside_transaction": {"parallel_publishers"},
    "no_skip_locked": {"parallel_publishers"},
    "no_lock": {"parallel_publishers"},
    "claim_ignores_order": {"order_per_aggregate"},
    "no_partial_index": {"partial_index"},
    "unused_partial_index_o": {"partial_index"},
    "cleanup_unpublished": {"cleanup_published_only"},
    "backlog_server_clock": {"backlog"},
    "dedup_by_pedido_id": {"consumer_dedups"},
}
NAMES = sorted(EXPECTED_FAILURES)


def solution() -> nbformat.NotebookNode:
    """Lab 3's solution notebook, as the instructor has it."""
    return nbformat.read(SOLUTION, as_version=4)


def _region(source: str, function: str) -> str:
    """The text of the solution region inside `def function(`, delimiters included."""
    match = re.search(rf"def {function}\(.*?(    ### BEGIN SOLUTION\n.*?    ### END SOLUTION)", source, re.DOTALL)
    assert match, f"no solution region in {function}; update tests/labs/lab3_variants.py"
    return match.group(1)


def variant(name: str) -> nbformat.NotebookNode:
    """The solution with the mistake `name`, without its hidden cells."""
    if name in LINES:
        return lab_variants.edited(LINES[name], name, solution())
    cell_id, function, body = BODIES[name]
    source = next(cell.source for cell in solution().cells if cell.get("id") == cell_id)
    return lab_variants.edited([(cell_id, _region(source, function), body)], name, solution())
