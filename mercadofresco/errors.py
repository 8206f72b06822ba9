"""The one base class every error of the workbook derives from, and the range check the settings share."""


class MercadoFrescoError(Exception):
    """Something in the MercadoFresco workbook went wrong."""


def check_range(name: str, value: float, low: float, high: float, error: type[ValueError] = ValueError) -> None:
    """Raise `error` naming the setting and its allowed range unless low <= value <= high."""
    if not low <= value <= high:
        raise error(f"{name} must be between {_number(low)} and {_number(high)}; got {_number(value)}")


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
