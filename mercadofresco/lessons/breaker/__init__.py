"""Section 9: the circuit breaker during the gateway's outage (notebook 09)."""
