"""Lab 3 as learners might hand it in: the solution with one of the outbox's classic mistakes.

Each variant changes one idea of the solution (the lesson's sections 13 and 17). `EXPECTED_FAILURES`
names the hidden checks each must fail (at least).
"""

from __future__ import annotations

import re
from pathlib import Path

import lab_variants
import nbformat

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "solutions" / "lab3_outbox.ipynb"
LAB = ROOT / "labs" / "lab3_outbox.ipynb"

SCHEMA, PUBLISHER, CONSUMER, OPERATE = "o06", "o10", "o14", "o18"
ENTRY = '{"Source": world.ORDER_SOURCE, "DetailType": "PedidoCreado", "Detail": detail, "EventBusName": world.BUS}'
INSERT_ORDER = (
    '    conn.execute("INSERT INTO pedidos (pedido_id, importe, creado_en) VALUES (%s, %s, %s)",'
    " (order.pedido_id, order.importe, now))\n"
)
DETAIL = '    detail = json.dumps({"pedido_id": order.pedido_id, "importe": str(order.importe)})\n'

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
}

# Line edits: {variant: [(cell id, text in the solution, replacement)]}.
LINES: dict[str, list[tuple[str, str, str]]] = {
    # "FOR UPDATE" alone: the second publisher waits for the first one's rows.
    "no_skip_locked": [(PUBLISHER, "FOR UPDATE SKIP LOCKED", "FOR UPDATE")],
    # No lock at all: two publishers read the same rows.
    "no_lock": [(PUBLISHER, " FOR UPDATE SKIP LOCKED", "")],
    # A full index instead of a partial one.
    "no_partial_index": [(SCHEMA, "ON outbox (creado_en, id) WHERE NOT publicado", "ON outbox (creado_en, id)")],
    # The cleanup deletes by age whether the row was published or not.
    "cleanup_unpublished": [
        (OPERATE, "DELETE FROM outbox WHERE publicado AND publicado_en < %s", "DELETE FROM outbox WHERE creado_en < %s")
    ],
    # The consumer keys by the order, so two different events of one order count as one.
    "dedup_by_pedido_id": [(CONSUMER, "detail['outbox_id']", "detail['pedido_id']")],
}

EXPECTED_FAILURES = {
    "publish_then_commit": {"no_event_lost"},
    "commit_then_publish": {"no_event_lost"},
    "mark_before_publish": {"no_event_lost"},
    "no_skip_locked": {"parallel_publishers"},
    "no_lock": {"parallel_publishers"},
    "no_partial_index": {"partial_index"},
    "cleanup_unpublished": {"cleanup_published_only"},
    "dedup_by_pedido_id": {"consumer_dedups"},
}
NAMES = sorted(EXPECTED_FAILURES)


def solution() -> nbformat.NotebookNode:
    """Lab 3's solution notebook, as the instructor has it."""
    return nbformat.read(SOLUTION, as_version=4)


def _region(source: str, function: str) -> str:
    """The text of the solution region inside `def function(`, delimiters included."""
    match = re.search(rf"def {function}\(.*?(    ### BEGIN SOLUTION\n.*?    ### END SOLUTION)", source, re.DOTALL)
    assert match, f"no solution region in {function}; update tests/lab3_variants.py"
    return match.group(1)


def variant(name: str) -> nbformat.NotebookNode:
    """The solution with the mistake `name`, without its hidden cells."""
    if name in LINES:
        return lab_variants.edited(LINES[name], name, solution())
    cell_id, function, body = BODIES[name]
    source = next(cell.source for cell in solution().cells if cell.get("id") == cell_id)
    return lab_variants.edited([(cell_id, _region(source, function), body)], name, solution())
