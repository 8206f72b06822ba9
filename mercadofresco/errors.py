"""The one base class every error of the workbook derives from, and the range check the settings share."""


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
        notes = ([f"exclusive of {_number(low)}"] if low_excluded else []) + ([why] if why else [])
        reason = f" ({'; '.join(notes)})" if notes else ""
        raise error(f"{name} must be between {_number(low)} and {_number(high)}{reason}; got {_number(value)}")


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
