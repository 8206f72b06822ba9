"""Sections 5-8: backoff and jitter, what and where to retry, the retry storm (notebooks 05-08)."""
