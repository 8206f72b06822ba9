"""A narrow fix for moto's EventBridge: the same JSONPath read once, not once per event and target.

What moto 5.2.5 does (`moto/events/utils.py`, `EventTemplateParser.parse`): for
every event a rule sends to a target, it builds the target's input from eight
JSONPath expressions ($.id, $.detail, …), and `jsonpath_ng.ext.parse` builds a
new parser (its grammar tables included) for each one: about 0.4 ms an
expression, 3-4 ms an event. Forty events through `bus-cloudshop` cost 0.2 s of
parsing the same eight strings.

`cached_jsonpath()` memoizes `jsonpath_ng.ext.parse` while it is open. A parsed
expression is only read afterwards (`find`), so the events and their targets'
input are the same as without it; on leaving, moto's own function is back.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator


@contextlib.contextmanager
def cached_jsonpath() -> Iterator[None]:
    """Within the block, each JSONPath expression moto's EventBridge reads is parsed once."""
    import jsonpath_ng.ext  # moto's dependency; imported here, by the code that puts events

    original = jsonpath_ng.ext.parse
    jsonpath_ng.ext.parse = functools.cache(original)  # moto imports `parse` from the module at each event
    try:
        yield
    finally:
        jsonpath_ng.ext.parse = original
