"""Section 14: backpressure, upstream and downstream (notebook 14)."""
