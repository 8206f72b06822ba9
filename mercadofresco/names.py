"""The lesson's names: MercadoFresco's queues, table, bus, topics and metrics, as AWS sees them.

This module imports nothing. The patterns take their default names from here, so a pattern a
team copies carries the lesson's resource names without pulling in the world that builds them
in moto (`world` re-exports every name, for the notebooks that read `world.ORDERS_QUEUE`).
"""

ORDERS_QUEUE = "cola-mercadofresco-pedidos"
ORDERS_DLQ = "mercadofresco-pedidos-fallidos"
IDEMPOTENCY_TABLE = "mercadofresco-idempotencia"
KMS_ALIAS = "alias/mercadofresco-datos"
BUS = "bus-mercadofresco"
BUS_RULE = "regla-mercadofresco-pedido-confirmado"
WAREHOUSE_QUEUE = "cola-mercadofresco-almacen"  # the rule's target
TOPIC = "mercadofresco-pedido-confirmado"
FANOUT_QUEUES = ("cola-mercadofresco-correo", "cola-mercadofresco-erp")
ALERTS_TOPIC = "alertas-mercadofresco"
METRICS_NAMESPACE = "MercadoFresco/Tienda"
ORDER_SOURCE = "mercadofresco.tienda"
