"""Section 12: ordering with FIFO message groups and versioned writes (notebook 12)."""
