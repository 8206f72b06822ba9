"""The one base class every error of the workbook derives from, and the range check the settings share."""

from mercadofresco.i18n import _, number


class MercadoFrescoError(Exception):
    """Something in the MercadoFresco workbook went wrong."""


def check_range(
    name: str,
    value: float,
    low: float,
    high: float,
    error: type[ValueError] = ValueError,
    why: str = "",
    low_excluded: bool = False,
) -> None:
    """Raise `error` naming the setting and its allowed range unless low <= value <= high.

    `why` says where the range comes from ("Lambda's range"); it goes in brackets after the range.
    `low_excluded` makes the range open at its low end (low < value), for settings that cannot be 0.
    """
    above_low = low < value if low_excluded else low <= value
    if not (above_low and value <= high):
        notes = ([_("exclusive of {low}").format(low=_number(low))] if low_excluded else []) + ([why] if why else [])
        reason = f" ({'; '.join(notes)})" if notes else ""
        said = _("{name} must be between {low} and {high}{reason}; got {value}")
        raise error(said.format(name=name, low=_number(low), high=_number(high), reason=reason, value=_number(value)))


def _number(value: float) -> str:
    return number(value, "g") if isinstance(value, float) else number(value) if isinstance(value, int) else str(value)
