"""Section 13: the dual write against the transactional outbox on PostgreSQL (notebook 13)."""
