"""The `sample`, `tokenizer` and `encode` flows: a stable hash sample of the corpus, a byte-level BPE trained
on it, and the whole corpus encoded into memmap-able token shards."""

from __future__ import annotations

import dataclasses
import os

from flows.config import PipelineConfig, load_config
from flows.flow_decorator import flow
from flows.plans import Planner, flow_planner
from flows.stage_runner import publish, run_shards, shard_task, up_to_date
from storage.parquet import parquet_files
from tasks import encode as encode_stage
from tasks import sample as sample_stage
from tasks import tokenizer as tokenizer_stage

sample_task = shard_task(sample_stage.sample_shard, "sample-shard")
encode_task = shard_task(encode_stage.encode_shard, "encode-shard")


# ------------------------------------------------------------------------------------------------- sample


@flow(name="sample")
def sample_flow(config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None, force: bool = False) -> str:
    """A deterministic hash sample of the corpus (stable as it grows), bounded in bytes; returns its dataset."""
    cfg = load_config(config)
    plan = flow_planner(cfg, "sample", input_path).plan("sample")
    input_path = plan.inputs[0].path
    if done := up_to_date(cfg, plan, force):
        return done
    parts = parquet_files(input_path)
    with plan.writer() as w:
        calls = [{"in_part": str(p), "out_part": str(w.part_path(i)), "params": cfg.sample} for i, p in enumerate(parts)]
        results = run_shards(sample_task, calls, [p.stem for p in parts], w, cfg.runner)
        bound = sample_stage.apply_byte_bound(results, cfg.sample)
        counts, stats = sample_stage.summarize_sample(results, bound)
        return publish(cfg, plan, w, counts, stats, force)


# ---------------------------------------------------------------------------------------------- tokenizer


@flow(name="tokenizer")
def tokenizer_flow(
    config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None, force: bool = False
) -> str:
    """Train the byte-level BPE tokenizer on the sample; returns the dataset holding `tokenizer.json`."""
    cfg = load_config(config)
    plan = flow_planner(cfg, "tokenizer", input_path).plan("tokenizer")
    input_path = plan.inputs[0].path
    if done := up_to_date(cfg, plan, force):
        return done
    with plan.writer() as w:
        info = tokenizer_stage.train_tokenizer([str(p) for p in parquet_files(input_path)], w.tmp, cfg.tokenizer)
        counts = {"in": info.train_docs, "out": info.vocab_size, "bytes_in": info.train_bytes}
        return publish(cfg, plan, w, counts, dataclasses.asdict(info) | {"path": "tokenizer.json"}, force)


# ------------------------------------------------------------------------------------------------- encode


@flow(name="encode")
def encode_flow(
    config: PipelineConfig | str = "configs/demo.yaml",
    input_path: str | None = None,
    corpus_path: str | None = None,
    force: bool = False,
) -> str:
    """Encode the whole corpus with the tokenizer into {train,val}/shard-NNNNN.bin (+ .idx); returns the dataset.

    `input_path` is the tokenizer dataset; `corpus_path` the documents (both found from the config if omitted).
    """
    cfg = load_config(config)
    planned = Planner(cfg)
    plan = Planner(cfg, {"tokenizer": input_path or planned.require("tokenizer", "encode").path,
                         "dedup": corpus_path or planned.require("dedup", "encode").path}).plan("encode")
    corpus_path, tokenizer_path = plan.inputs[0].path, plan.inputs[1].path
    if done := up_to_date(cfg, plan, force):
        return done
    parts = parquet_files(corpus_path)
    tok_file = os.path.join(tokenizer_path, "tokenizer.json")
    with plan.writer() as w:
        calls = [{"in_part": str(p), "tokenizer_path": tok_file, "out_dir": str(w.tmp), "shard_index": i,
                  "params": cfg.encode} for i, p in enumerate(parts)]
        results = run_shards(encode_task, calls, [p.stem for p in parts], w, cfg.runner)
        counts, stats = encode_stage.summarize_encode(results)
        return publish(cfg, plan, w, counts, stats, force)

