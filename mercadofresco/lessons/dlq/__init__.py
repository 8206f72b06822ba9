"""Sections 10-11: dead-letter queues, their incidents and the runbook (notebooks 10-11)."""
