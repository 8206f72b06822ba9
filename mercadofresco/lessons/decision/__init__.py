"""Section 15: which service for which need (notebook 15)."""
