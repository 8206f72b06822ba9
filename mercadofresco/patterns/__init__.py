"""What the lesson teaches and a team would copy: idempotency, backoff and retry, the circuit breaker, DLQ handling."""
