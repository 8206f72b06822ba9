"""Plumbing a learner never copies: where calls go and the settings that say so, cleanup, real-time pacing,
the database server, billing and the moto patches."""
