"""Models: small, labelled stand-ins for what AWS offers but moto does not run (or AWS does not offer at all).

The payment gateway, Lambda's SQS event-source mapping, CloudWatch's alarm
evaluation, SQS's StartMessageMoveTask and an EventBridge pipe reading a
DynamoDB stream. Each says what it models and where it differs.
"""
