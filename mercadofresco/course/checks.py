"""The public and hidden checks of the labs fail with a hint, never with a bare AssertionError.

Kept apart from `grading` so that a lab notebook imports only this small module.
"""

from __future__ import annotations

from collections.abc import Callable

from mercadofresco.errors import MercadoFrescoError


class CheckFailed(MercadoFrescoError, AssertionError):
    """A lab check did not hold; the message is the hint for the learner."""


def expect(condition: Callable[[], object] | bool, hint: str, seen: Callable[[], object] | None = None) -> None:
    """Fail with `hint` unless `condition` (or calling it) is true; errors inside it become the hint too.

    `seen()`, when given, says what the check saw; it is asked only on a failure and added to the hint.
    """
    try:
        holds = condition() if callable(condition) else condition
    except CheckFailed:
        raise
    except Exception as exc:  # the learner's code raised: say so, with the hint
        raise CheckFailed(f"{hint} (the check could not run: {type(exc).__name__}: {exc})") from None
    if not holds:
        raise CheckFailed(f"{hint} (seen: {_seen(seen)})" if seen is not None else hint)


def _seen(seen: Callable[[], object]) -> str:
    try:
        return str(seen())
    except Exception as exc:  # what was seen could not even be read
        return f"nothing readable ({type(exc).__name__})"
