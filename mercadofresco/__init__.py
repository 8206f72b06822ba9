"""MercadoFresco reliability workbook: the package behind the lesson 07-05 notebooks.

Its folders are its layers; each imports only from the ones below it (pyproject.toml's import contracts):

    course/     the labs: what a learner is handed, its checks, and the instructor's tools (in rooms of its own)
    lessons/    the per-section experiments and figures the notebooks call
    shop/ sims/ MercadoFresco's handlers; simpy simulations at the lesson's scale
    models/     labelled stand-ins for what AWS or moto lacks (gateway, Lambda poller, alarms, move task)
    patterns/   what the lesson teaches and a team would copy (idempotency, retry, breaker, DLQ…)
    world       the lesson's AWS resources in one of three modes
    clock, queues, orders, alarms, bus   what the world is built on
    runtime/    the plumbing: clients, moto's fixes, the database, the settings
    errors, names, moved                 what everything shares (moved: old names and where they went)

Import modules, not their names, so every notebook cell shows where a function lives:

    from mercadofresco import clock, world
    from mercadofresco.patterns import idempotency
"""

from mercadofresco import moved

__version__ = "0.1.0"


def __getattr__(name: str) -> object:  # names that moved away keep working a while (mercadofresco.moved)
    return moved.attribute(__name__, name)
