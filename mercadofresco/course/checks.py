"""The public and hidden checks of the labs fail with a hint, never with a bare AssertionError.

A lab's public check cell runs its checks inside `with checks.part("(d)"):` so that every check of
the cell runs and reports: a "✓ passed:" line for each that holds, a "✗ failed:" line with the hint and what
was seen for each that does not, and one short error at the end if any failed. The words are there for a
screen reader, which reads the two marks alike or not at all; the error is bold, in the intense red JupyterLab
gives bold text (5:1 on its error background, where plain ANSI red is under 3:1). Outside a part, `expect` fails
at once (the hidden checks work that way).

Kept apart from `grading` so that a lab notebook imports only this small module.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from mercadofresco.errors import MercadoFrescoError
from mercadofresco.i18n import N_, _, pgettext

ERROR_STYLE = "\x1b[1;31m"  # bold red: JupyterLab draws it in its intense red (#b22b31), 5:1 on #fdd
_open_parts: list[list[str]] = []  # the failures of each `part` being run, innermost last


class CheckFailed(MercadoFrescoError, AssertionError):
    """A lab check did not hold; the message is the hint for the learner."""

    def __init__(self, message: str, shown: str | None = None) -> None:
        super().__init__(message)
        self.shown = shown if shown is not None else f"CheckFailed: {message}"

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback: the hint, not the checks module's internals."""
        return [f"{ERROR_STYLE}{line}\x1b[0m" for line in self.shown.splitlines()]


def expect(
    condition: Callable[[], object] | bool,
    hint: str,
    seen: Callable[[], object] | None = None,
    holds: str | None = None,
) -> None:
    """Check that `condition` (or calling it) is true; errors inside it become the hint too.

    `seen()`, when given, says what the check saw; it is asked only on a failure and added to the hint.
    Inside a `part`, a failure is reported and the next check runs; outside one, it raises CheckFailed.
    `holds` is what the ✓ line says when the check holds (by default the rule the hint states).
    """
    failure = _failure(condition, hint, seen)
    if not _open_parts:
        if failure is not None:
            raise CheckFailed(failure)
        return
    if failure is None:
        print(_("✓ passed: {rule}").format(rule=holds or summary(hint)))  # the word: what a screen reader says
    else:
        print(_("✗ failed: {failure}").format(failure=failure))
        _open_parts[-1].append(failure)


def no_counterexample(search: Callable[[], object], rule: str) -> None:
    """Check that `search()` finds no world breaking `rule`: a ✓ line, or a ✗ line with the smallest world found.

    `search` returns None or a counterexample (its `why`, one line, and its `story`, a line for each step). A rule
    that is a property's docstring line (`holds.__doc__`) is said in the learner's edition.
    """
    rule = pgettext("property rule", rule)
    try:
        found = search()
    except Exception as exc:  # the learner's code failed otherwise: say so
        expect(False, could_not_run(rule, exc))
        return
    if found is None:
        expect(True, rule, holds=rule)
        return
    story = "\n".join(f"      {line}" for line in getattr(found, "story", ()))
    said = _("{rule}; the smallest world that breaks it: {why}").format(rule=rule, why=getattr(found, "why", found))
    expect(False, f"{said}\n{story}".rstrip())


@contextmanager
def part(name: str) -> Iterator[None]:
    """Run every check of a cell, print "✓ passed:" or "✗ failed:" for each, and fail once at the end if any did."""
    failures: list[str] = []
    _open_parts.append(failures)
    try:
        yield
    except CheckFailed as exc:  # a check that fails at once (e.g. a helper's own expect outside this part)
        print(_("✗ failed: {failure}").format(failure=exc))
        failures.append(str(exc))
    except Exception as exc:  # code between the checks raised: the checks after it could not run
        failure = _("public check {name} stopped: {error}: {message}").format(
            name=name, error=type(exc).__name__, message=exc
        )
        print(_("✗ failed: {failure}").format(failure=failure))
        failures.append(failure)
    finally:
        _open_parts.remove(failures)
    if failures:
        said = _("public check {name}: {count} failed (the lines above); fix them and run it again")
        shown = "CheckFailed: " + said.format(name=name, count=len(failures))
        raise CheckFailed("\n".join(failures), shown=shown) from None
    print(_("public check {name} passed").format(name=name))


COULD_NOT_RUN = N_("{hint} (the check could not run: {error})")  # selfcheck's report reads it back


def could_not_run(hint: str, exc: BaseException) -> str:
    """A check whose own code raised: its hint, and the error (the learner's code raised inside the check)."""
    return _(COULD_NOT_RUN).format(hint=hint, error=f"{type(exc).__name__}: {exc}")


def summary(hint: str) -> str:
    """The rule a hint states, without its advice: the text before its first ': ' or '; '."""
    return re.split(r": |; ", hint, maxsplit=1)[0]


def _failure(condition: Callable[[], object] | bool, hint: str, seen: Callable[[], object] | None) -> str | None:
    try:
        holds = condition() if callable(condition) else condition
    except CheckFailed as exc:
        return str(exc)
    except Exception as exc:  # the learner's code raised: say so, with the hint
        return could_not_run(hint, exc)
    if holds:
        return None
    return _("{hint} (seen: {seen})").format(hint=hint, seen=_seen(seen)) if seen is not None else hint


def _seen(seen: Callable[[], object]) -> str:
    try:
        return str(seen())
    except Exception as exc:  # what was seen could not even be read
        return _("nothing readable ({error})").format(error=type(exc).__name__)
