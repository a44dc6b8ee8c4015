"""One module per pipeline stage: plain functions that do the work on a shard, and thin Prefect task wrappers."""
