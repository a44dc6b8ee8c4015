"""Prefect flows: one per stage, the composite `pipeline`, and the `chatlike` command line. No stage logic."""
