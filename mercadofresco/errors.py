"""The one base class every error of the workbook derives from."""


class MercadoFrescoError(Exception):
    """Something in the MercadoFresco workbook went wrong."""
