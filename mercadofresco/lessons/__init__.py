"""The per-section experiments and figures the notebooks call: each runs a model or an experiment and returns rows."""
