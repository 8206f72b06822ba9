"""A stand-in for a learner's kernel: run a lab notebook's code cells here, then answer the checker.

    python tests/labs/kernel_stand_in.py NOTEBOOK SOCKET [RECORD]

With RECORD, every answer sent to the checker is written there (JSON lines: the call and its answer), for
the test that replays them from a stub that touches no world.
"""

import json
import sys

import matplotlib
import nbformat

from mercadofresco.course.checker import boundary, learner_side

matplotlib.use("Agg")
notebook = nbformat.read(sys.argv[1], as_version=4)
namespace = {"__name__": "__main__"}
for cell in notebook.cells:
    if cell.cell_type == "code":
        source = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))
        try:
            exec(compile(source, "cell", "exec"), namespace)
        except Exception as exc:
            print("cell failed:", type(exc).__name__, exc, file=sys.stderr)
if len(sys.argv) > 3:
    calls, out = {}, open(sys.argv[3], "w")  # noqa: SIM115 (open for the life of this process)
    serve_one, send = boundary.Boundary._serve, boundary.Boundary._send

    def _serve(self, lane, message):
        calls[(lane, message["id"])] = message
        serve_one(self, lane, message)

    def _send(self, message):
        if "call" not in message and (message["lane"], message["id"]) in calls:
            out.write(json.dumps({"call": calls[(message["lane"], message["id"])], "answer": message}) + "\n")
            out.flush()
        send(self, message)

    boundary.Boundary._serve, boundary.Boundary._send = _serve, _send
learner_side.serve(namespace, sys.argv[2])
