"""Lab 3 notebooks that attack the grader, written by a session playing a hostile student (issue 47, 6 December).

Each is the solution with code appended to its answer cells: a wrong publisher that hides from a check, or a
trigger that tries to hold the grader. `AIMED` names the hidden check each must fail; tests/labs/test_lab3.py grades
them with the other variants. Before the fixes they scored 15 of 15 (the first three) or held the grader for the
notebook's whole budget (930 s).
"""

from __future__ import annotations

from tests.labs import lab3_variants
from tests.labs import lab_variants
import nbformat

SCHEMA, PUBLISHER, OPERATE = "o06", "o10", "o18"
ENDS = {  # the last line of each answer cell, where an attack is appended
    SCHEMA: "    return row[0]\n    ### END SOLUTION",
    PUBLISHER: "    return len(published)\n    ### END SOLUTION",
    OPERATE: "    return cursor.rowcount\n    ### END SOLUTION",
}

MARK_AFTER_COMMIT = '''
def publish_pending(conn, bus, now, batch_size=BATCH_SIZE):
    """WRONG on purpose: the mark runs after the COMMIT, so a sent row is free and unpublished for a moment."""
    with conn.transaction():
        rows = conn.execute(CLAIM_SQL, (batch_size,)).fetchall()
        published = []
        for start in range(0, len(rows), 10):
            batch = rows[start : start + 10]
            entries = [
                {
                    "Source": world.ORDER_SOURCE,
                    "DetailType": tipo_evento,
                    "Detail": json.dumps({**payload, "outbox_id": row_id}),
                    "EventBusName": world.BUS,
                }
                for row_id, tipo_evento, payload in batch
            ]
            answer = bus.put_events(Entries=entries)
            published += [row[0] for row, result in zip(batch, answer["Entries"], strict=True) if "EventId" in result]
    # the row locks ended with the COMMIT above: another publisher may take (and send again) these rows now
    conn.execute("UPDATE outbox SET publicado = true, publicado_en = %s WHERE id = ANY(%s)", (now, published))
    return len(published)
'''

RLS_BLIND_RIVAL = """
SCHEMA_SQL = SCHEMA_SQL + [
    "ALTER TABLE outbox ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE outbox FORCE ROW LEVEL SECURITY",  # the rival connects as the table's owner (mf_learner)
    "CREATE POLICY todo_menos_el_rival ON outbox"
    " USING (current_setting('statement_timeout') <> '3s') WITH CHECK (true)",
]
"""

HANG_GRADER = '''
SCHEMA_SQL = SCHEMA_SQL + [
    """CREATE FUNCTION cuelga() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF current_setting('mf.mine', true) IS DISTINCT FROM 'si' AND current_schema() = 'lab3_grader' THEN
            IF current_setting('statement_timeout') = '0' THEN
                PERFORM pg_sleep(86400);
            ELSE
                PERFORM set_config('statement_timeout', '0', false);
                PERFORM set_config('lock_timeout', '0', false);
            END IF;
        END IF;
        RETURN NEW;
    END $$""",
    "CREATE TRIGGER cuelga BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION cuelga()",
]

def _mine(function):
    def marked(conn, *args, **kwargs):
        conn.execute("SET mf.mine = 'si'")
        return function(conn, *args, **kwargs)
    marked.__name__ = function.__name__
    return marked

place_order = _mine(place_order)
'''

HANG_GRADER_PUBLISH = """
publish_pending = _mine(publish_pending)
"""

HANG_GRADER_TAIL = """
cleanup = _mine(cleanup)
backlog = _mine(backlog)
"""

ORDER_GAME = """
CLAIM_SQL = (
    "SELECT id, tipo_evento, payload FROM outbox WHERE NOT publicado"
    " ORDER BY creado_en, id LIMIT %s FOR UPDATE SKIP LOCKED"
)
_honest_publish = publish_pending

def publish_pending(conn, bus, now, batch_size=BATCH_SIZE):
    with conn.transaction():
        alone = conn.execute("SELECT pg_try_advisory_xact_lock(4747)").fetchone()[0]
        probing = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM outbox WHERE NOT publicado AND tipo_evento <> 'PedidoCreado')"
        ).fetchone()[0]
    if not alone and probing:
        return 0  # another publisher holds a batch and this looks like the ordering probe: stand aside
    with conn.transaction():
        conn.execute("SELECT pg_try_advisory_xact_lock(4747)")  # held for this batch: others see a publisher at work
        return _publish_in(conn, bus, now, batch_size)

def _publish_in(conn, bus, now, batch_size):
    rows = conn.execute(CLAIM_SQL, (batch_size,)).fetchall()
    published = []
    for start in range(0, len(rows), 10):
        batch = rows[start : start + 10]
        entries = [
            {
                "Source": world.ORDER_SOURCE,
                "DetailType": tipo_evento,
                "Detail": json.dumps({**payload, "outbox_id": row_id}),
                "EventBusName": world.BUS,
            }
            for row_id, tipo_evento, payload in batch
        ]
        answer = bus.put_events(Entries=entries)
        published += [row[0] for row, result in zip(batch, answer["Entries"], strict=True) if "EventId" in result]
    conn.execute("UPDATE outbox SET publicado = true, publicado_en = %s WHERE id = ANY(%s)", (now, published))
    return len(published)
"""

LOSSY = '''
def publish_pending(conn, bus, now, batch_size=BATCH_SIZE):
    """WRONG on purpose: a refused entry's row is marked published anyway (its event is lost)."""
    with conn.transaction():
        rows = conn.execute(CLAIM_SQL, (batch_size,)).fetchall()
        taken, lost = 0, []
        for start in range(0, len(rows), 10):
            batch = rows[start : start + 10]
            entries = [
                {
                    "Source": world.ORDER_SOURCE,
                    "DetailType": tipo_evento,
                    "Detail": json.dumps({**payload, "outbox_id": row_id}),
                    "EventBusName": world.BUS,
                }
                for row_id, tipo_evento, payload in batch
            ]
            answer = bus.put_events(Entries=entries)
            taken += sum("EventId" in result for result in answer["Entries"])
            lost += [row[0] for row, result in zip(batch, answer["Entries"], strict=True) if "EventId" not in result]
        conn.execute("UPDATE outbox SET publicado = true, publicado_en = %s WHERE id = ANY(%s)",
                     (now, [row[0] for row in rows]))
        HIDE(conn, lost)
    return taken

def HIDE(conn, lost):
    pass
'''

COVER_UP = '''
def HIDE(conn, lost):
    """...and the evidence goes: the orders whose events were lost, and their outbox rows."""
    if lost:
        conn.execute(
            "DELETE FROM pedidos WHERE pedido_id IN (SELECT agregado_id FROM outbox WHERE id = ANY(%s))", (lost,)
        )
        conn.execute("DELETE FROM outbox WHERE id = ANY(%s)", (lost,))
'''


ATTACKS = {
    # row-level security that hides the rows from the grader's rival publisher, around a mark after the COMMIT
    "rls_blinds_the_rival": {SCHEMA: RLS_BLIND_RIVAL, PUBLISHER: MARK_AFTER_COMMIT},
    # a trigger that lifts the timeouts of any session not the learner's, then sleeps a day on its next INSERT
    "trigger_holds_the_graders_session": {
        SCHEMA: HANG_GRADER,
        PUBLISHER: HANG_GRADER_PUBLISH,
        OPERATE: HANG_GRADER_TAIL,
    },
    # a claim without the ordering guard that stands aside whenever another publisher holds a batch
    "stands_aside_when_probed": {PUBLISHER: ORDER_GAME},
    # a publisher that loses refused events and deletes their orders and rows, so no table shows the loss
    "deletes_the_events_it_lost": {PUBLISHER: LOSSY + COVER_UP},
}
AIMED = {
    "rls_blinds_the_rival": {"parallel_publishers"},
    "trigger_holds_the_graders_session": {"backlog"},
    "stands_aside_when_probed": {"order_per_aggregate"},
    "deletes_the_events_it_lost": {"event_contract", "partial_put_events"},
}


def attack(name: str) -> nbformat.NotebookNode:
    """The solution with the attack `name` appended to its answer cells."""
    edits = [(cell, ENDS[cell], ENDS[cell] + "\n\n\n" + code.strip() + "\n") for cell, code in ATTACKS[name].items()]
    return lab_variants.edited(edits, name, lab3_variants.solution())
