"""The `ingest` flow: raw input files → documents (+ WhatsApp messages), one shard task per file."""

from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger

from flows.config import PipelineConfig, load_config
from flows.flow_decorator import flow
from flows.plans import Planner
from flows.stage_runner import publish, run_shards, shard_key, shard_task, up_to_date
from storage.dataset import read_manifest
from tasks import ingest as ingest_stage

ingest_file_task = shard_task(ingest_stage.ingest_file, "ingest-file")


@flow(name="ingest", log_prints=False)
def ingest_flow(config: PipelineConfig | str = "configs/demo.yaml", force: bool = False) -> str:
    """Read every configured input file into the documents dataset; returns its path."""
    cfg = load_config(config)
    plan = Planner(cfg).plan("ingest")
    files = plan.details["files"]
    if plan.existing is not None and not force:  # published under `on_unreadable: skip`, or before it existed
        ingest_stage.check_readable(read_manifest(plan.existing).stats.get("unreadable_files", {}), cfg.ingest)
    if done := up_to_date(cfg, plan, force):
        return done
    log = get_run_logger()
    log.info("ingest: %d file(s) → %s", len(files), plan.fingerprint[:16])
    with plan.writer() as w:
        has_messages = any(f.kind in ingest_stage.CHAT_KINDS for f in files)
        calls = [
            {
                "f": f,
                "part_path": str(w.part_path(i)),
                "messages_part_path": str(w.part_path(i, "messages")) if has_messages else None,
                "params": cfg.ingest,
            }
            for i, f in enumerate(files)
        ]
        # A file's documents depend on its content, kind, name and the ingest settings, not on the other files:
        # a nightly run reuses the parts of files an earlier run already read.
        settings = {k: v for k, v in cfg.ingest.fingerprint_params().items() if k != "inputs"}
        keys = [shard_key(ingest_stage.STAGE, ingest_stage.STAGE_VERSION, settings, f.sha256, f.kind, f.source,
                          Path(f.path).name, has_messages) for f in files]
        outputs = [[w.tmp / f"part-{i:05d}.parquet", w.tmp / "messages" / f"part-{i:05d}.parquet"]
                   for i in range(len(files))]
        names = [f"part-{i:05d}" for i in range(len(files))]
        results = run_shards(ingest_file_task, calls, names, w, cfg.runner, keys=keys, outputs=outputs)
        unreadable = ingest_stage.unreadable_files(results)
        ingest_stage.check_readable(unreadable, cfg.ingest)  # fails naming every unreadable file, publishing nothing
        for error in unreadable.values():
            log.warning("ingest: skipped (ingest.on_unreadable: skip): %s", error)
        copies = ingest_stage.merge_chat_copies([c["part_path"] for c in calls],
                                                [c["messages_part_path"] for c in calls],
                                                [f.source for f in files], cfg.ingest)
        for i in copies.rewritten:  # its part is no longer what the file alone gives: not reused by a later run
            w.record_shard(names[i], results[i].as_record(), None, outputs[i])
        counts, stats = ingest_stage.SUMMARY(results)
        if copies.merged:
            counts, stats = ingest_stage.count_chat_copies(counts, stats, copies, [c["part_path"] for c in calls])
            log.info("ingest: %d chat(s) found in several inputs (an export and a database, or two exports), "
                     "merged into one: %d document(s) of copies left out", len(copies.merged),
                     counts["skipped_duplicate_chat_copy"])
        return publish(cfg, plan, w, counts, stats, force)
