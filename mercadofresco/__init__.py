"""MercadoFresco reliability workbook: the package behind the lesson 07-05 notebooks.

Import the modules, not their names, so every notebook cell shows where a function lives:

    from mercadofresco import clock, world, gateway, consumer
"""

__version__ = "0.1.0"
