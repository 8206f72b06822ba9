"""MercadoFresco reliability workbook: the package behind the lesson 07-05 notebooks.

Its folders are its layers; each imports only from the ones below it:

    course/     lab build, grading, checks, the notebook runner (not the shop's code)
    lessons/    the per-section experiments and figures the notebooks call
    shop/ sims/ MercadoFresco's handlers; simpy simulations at the lesson's scale
    models/     labelled stand-ins for what AWS or moto lacks (gateway, Lambda poller, alarms, move task)
    patterns/   what the lesson teaches and a team would copy (idempotency, retry, breaker, DLQ…)
    (top level) what everything shares: clock, world, queues, orders, alarms, errors, names; moved (old names)

Import modules, not their names, so every notebook cell shows where a function lives:

    from mercadofresco import clock, world
    from mercadofresco.patterns import idempotency
"""

from mercadofresco import moved

__version__ = "0.1.0"


def __getattr__(name: str) -> object:  # names that moved away keep working a while (mercadofresco.moved)
    return moved.attribute(__name__, name)
