"""The module names of labs handed out before the package was split into layers, for the grader.

Until November 2026 every module sat at the top of the package, so a learner's
lab says `from mercadofresco import consumer, delivery, show`. Those modules now
live in the layers (`models.lambda_poller` + `shop.handlers`, `lessons.delivery`…).
`install()` runs in the grading kernel only, before any learner cell: it makes
each old name an alias of its new home, so a notebook handed out earlier is
graded on what it does, not on where the package keeps its files. New labs use
the new paths; nothing in the package itself imports this module.
"""

from __future__ import annotations

import importlib
import re
import sys
import types

import mercadofresco

# old name -> the modules that now hold what it held, first the main one
OLD_MODULES = {
    "checks": ("course.checks",),
    "labs": ("course.labs",),
    "grading": ("course.grading",),
    "nbrun": ("course.nbrun",),
    "consumer": ("models.lambda_poller", "shop.handlers"),
    "gateway": ("models.gateway",),
    "redrive": ("models.move_task", "lessons.redrive"),
    "idempotency": ("patterns.idempotency",),
    "retry": (
        "patterns.retry",
        "patterns.retry_rules",
        "patterns.retry_budget",
        "patterns.retry_layers",
        "patterns.backoff",
    ),
    "breaker": ("patterns.breaker",),
    "breaker_store": ("patterns.breaker_store", "models.alarm_evaluation"),
    "dlq": ("patterns.dlq", "models.alarm_evaluation"),
    "sim": ("sims.contention", "sims.recovery"),
    "storm": ("sims.storm",),
    "redrive_model": ("sims.mass_redrive",),
    "delivery": ("lessons.delivery",),
    "duplicates": ("lessons.duplicates",),
    "incidents": ("lessons.incidents",),
    "outage": ("lessons.outage",),
    "powertools_compare": ("lessons.powertools_compare",),
    "retry_experiments": ("lessons.retry_experiments",),
    "show": ("lessons.show",),
    "show_dlq": ("lessons.show_dlq",),
    "show_retry": ("lessons.show_retry",),
}
# modules that kept their name but lost functions to a new module
MOVED_OUT = {"world": ("queues", "endpoints"), "alarms": ("models.alarm_evaluation",)}
RENAMED = {("dlq", "check_alarms"): "check_dlq_alarms"}


def _public(module: types.ModuleType) -> dict[str, object]:
    return {name: value for name, value in vars(module).items() if not name.startswith("__")}


def old_names_in(source: str) -> set[str]:
    """The old module names a notebook's code imports (empty for a notebook written for the layers)."""
    imported = set()
    for names in re.findall(r"from mercadofresco import \(?([\w\s,]+)\)?", source):
        imported |= {part.split(" as ")[0].strip() for part in names.split(",")}
    imported |= set(re.findall(r"mercadofresco\.(\w+)", source))
    return imported & set(OLD_MODULES)


def install(old_names: set[str] | None = None) -> None:
    """Make the old module names importable again (all of them by default), as aliases of their new homes."""
    for old, homes in OLD_MODULES.items():
        name = f"mercadofresco.{old}"
        if old_names is not None and old not in old_names:
            continue
        if name in sys.modules:
            continue
        modules = [importlib.import_module(f"mercadofresco.{home}") for home in homes]
        alias = types.ModuleType(name, f"Old name of {', '.join(homes)} (course.legacy).")
        for module in reversed(modules):  # the main home wins a name both define
            vars(alias).update(_public(module))
        for (module_name, was), now in RENAMED.items():
            if module_name == old:
                setattr(alias, was, getattr(alias, now))
        sys.modules[name] = alias
        setattr(mercadofresco, old, alias)
    for kept, homes in MOVED_OUT.items():
        module = importlib.import_module(f"mercadofresco.{kept}")
        for home in homes:
            for attr, value in _public(importlib.import_module(f"mercadofresco.{home}")).items():
                if not hasattr(module, attr) and not isinstance(value, types.ModuleType):
                    setattr(module, attr, value)
