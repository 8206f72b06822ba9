"""EventBridge's PutEvents for any number of events: 10 entries to a call, and a refused entry is an error."""

from __future__ import annotations

from typing import Any

from mercadofresco.errors import MercadoFrescoError
from mercadofresco.i18n import ngettext

ENTRIES_PER_CALL = 10  # PutEvents takes 1 to 10 entries


class EventsNotPublishedError(MercadoFrescoError):
    """The bus answered a PutEvents call with some entries refused; `failed` is how many."""

    def __init__(self, failed: int, first_error: str) -> None:
        said = ngettext(
            "the bus refused {count} event(s) of a PutEvents call: {error}",
            "the bus refused {count} event(s) of a PutEvents call: {error}",
            failed,
        )
        super().__init__(said.format(count=failed, error=first_error))
        self.failed = failed


def put_events(events: Any, entries: list[dict[str, Any]]) -> int:
    """Put `entries` on their buses, 10 to a PutEvents call; return how many were put.

    PutEvents answers 200 even when it refuses some entries (`FailedEntryCount`):
    an event dropped that way is lost unless someone raises, so this raises.
    """
    for start in range(0, len(entries), ENTRIES_PER_CALL):
        answer = events.put_events(Entries=entries[start : start + ENTRIES_PER_CALL])
        if answer.get("FailedEntryCount"):
            refused = next((entry for entry in answer["Entries"] if "ErrorCode" in entry), {})
            why = refused.get("ErrorMessage", refused.get("ErrorCode", ""))
            raise EventsNotPublishedError(answer["FailedEntryCount"], why)
    return len(entries)
