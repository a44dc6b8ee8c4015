"""The training flows: `pretrain` on the token shards, `sft-data` from the WhatsApp messages, full `sft` and
`lora` fine-tuning. A run directory is the stage's dataset: it is trained inside the writer's temp folder
(so a killed run resumes from its latest checkpoint) and published with its manifest when done. Training runs
in its own process (`python -m model.train`, or `torchrun` for several GPUs) whose output streams into the
run log and a progress artifact; cancelling the flow kills the process tree."""

from __future__ import annotations

import json
import os
from pathlib import Path
from uuid import UUID

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE

from flows.config import PipelineConfig, load_config
from flows.flow_decorator import flow
from flows.plans import (
    MissingInputError,
    StagePlan,
    chat_stages_active,
    external_base,
    flow_planner,
    planned_output,
)
from flows.report import png_markdown
from flows.stage_runner import publish, up_to_date
from storage.dataset import dataset_dir, read_manifest
from storage.parquet import count_rows, parquet_files
from tasks import training
from tasks.sft_data import build_sft_examples, count_authors


def data_tokenizer(cfg: PipelineConfig, data: str) -> str:
    """The tokenizer that encoded a dataset (the tokenizer input of encode or sft-data: the tokenizer stage's, or
    an imported base model's tokenizer.json)."""
    for ref in read_manifest(data).inputs:
        if ref.stage == "tokenizer":
            return str(dataset_dir(cfg.data_root, "tokenizer", ref.fingerprint) / "tokenizer.json")
        if ref.stage == "raw" and Path(ref.path).name == "tokenizer.json":
            return ref.path
    raise ValueError(f"{data}: its manifest names no tokenizer input (not an encode or sft-data dataset)")


@task(name="train", retries=0, cache_policy=NO_CACHE)
def _train(mode: str, params: training.TrainingParams, run_dir: Path, **run_kwargs) -> dict:
    """Launch one training run in its own process (torchrun for several GPUs), stream its JSON lines into the run
    log and a progress artifact; returns the `done` event it printed. Called directly, never submitted: Prefect
    turns a cancellation's SIGTERM into an exception in the main thread only, and that is what stops the
    training process tree."""
    log = get_run_logger()
    run_cfg = training.make_run_config(mode, params, run_dir, **run_kwargs)
    config_path = training.write_run_config(run_cfg)
    progress: UUID | None = None
    done: dict = {}

    def on_line(line: str) -> None:
        nonlocal progress
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            log.info("%s", line)
            return
        if not isinstance(event, dict):
            log.info("%s", line)
            return
        kind = event.get("event")
        if kind == "done":
            done.update(event)
        if kind in ("train", "eval", "sample", "checkpoint", "done", "start"):
            log.info("%s %s", mode, json.dumps({k: v for k, v in event.items() if k != "event"} | {"event": kind}))
        if kind == "train" and event.get("step") is not None:
            pct = 100.0 * event["step"] / max(params.max_steps, 1)
            if progress is None:
                progress = create_progress_artifact(progress=pct, key=f"{mode}-progress",
                                                    description=f"{mode} steps done (%)")
            else:
                update_progress_artifact(progress, pct)

    training.launch_training(["--config", str(config_path)], params.nproc, on_line, cwd=os.getcwd())
    if progress is not None:
        update_progress_artifact(progress, 100.0)
    return done


def _metrics_summary(run_dir: Path) -> dict:
    last: dict = {}
    path = run_dir / "metrics.jsonl"
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("event") in ("train", "eval", "done"):
                last[event["event"]] = event
    return last


def _publish_run(cfg: PipelineConfig, plan: StagePlan, w, done: dict, extra_stats: dict | None = None,
                 force: bool = False) -> str:
    summary = w.as_published(_metrics_summary(w.tmp))
    done = w.as_published(done)
    train = summary.get("train", {})
    counts = {"in": int(train.get("tokens_seen", 0)), "out": int(done.get("step", train.get("step", 0))),
              "steps": int(done.get("step", train.get("step", 0))), "tokens_seen": int(train.get("tokens_seen", 0))}
    stats = {"final": summary, **(extra_stats or {})}
    path = publish(cfg, plan, w, counts, stats, force)
    loss_png = Path(path) / "loss.png"
    if loss_png.is_file():
        create_markdown_artifact(
            key=f"{plan.stage}-loss",
            markdown=f"# {plan.stage} loss\n\n{png_markdown(loss_png, 'loss curve')}\n\n"
                     f"Final: {json.dumps(summary.get('train', {}))}\n\nFile: `{loss_png}`\n",
            description=f"{plan.stage} loss curve",
        )
    return path


# ---------------------------------------------------------------------------------------------- pretrain


@flow(name="pretrain")
def pretrain_flow(config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None,
                  force: bool = False) -> str | None:
    """Pretrain the model on the encoded token shards; returns the run (checkpoints, metrics, loss curve)."""
    cfg = load_config(config)
    if (base := external_base(cfg)) is not None:
        get_run_logger().info("pretrain: skipped: sft and lora fine-tune the imported model %s (sft.base)", base)
        return None
    planner = flow_planner(cfg, "pretrain", input_path)
    plan = planner.plan("pretrain")
    if done := up_to_date(cfg, plan, force):
        return done
    encode = plan.input("encode").path
    tokens = read_manifest(encode)
    with plan.writer() as w:
        finished = _train("pretrain", cfg.pretrain, w.tmp, tokenizer_path=data_tokenizer(cfg, encode),
                          train_data=Path(encode) / "train",
                          val_data=Path(encode) / "val" if (Path(encode) / "val").is_dir() else None,
                          tokens_manifest=tokens.stats)
        return _publish_run(cfg, plan, w, finished, force=force)


# ---------------------------------------------------------------------------------------------- sft-data


def skip_chat_stage(cfg: PipelineConfig, stage: str) -> None:
    """Say why a chat stage makes nothing, naming the authors of the chats when ingest has them."""
    listing = ""
    try:
        ingest, ok = planned_output(cfg, "ingest")
        parts = [str(p) for p in parquet_files(ingest, "messages")] if ok else []
        if parts:
            authors = count_authors(parts)
            listing = "; authors in the chats: " + ", ".join(f"{a!r} ({n})" for a, n in authors.most_common(10))
    except MissingInputError:
        pass
    get_run_logger().info("%s: skipped: set sft_data.target_author to the person to imitate%s", stage, listing)


@flow(name="sft-data")
def sft_data_flow(config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None,
                  force: bool = False) -> str | None:
    """WhatsApp messages → multi-turn chat examples with the target person as Assistant; returns the dataset
    (None, with the authors found in the log, when no target author is configured)."""
    cfg = load_config(config)
    if not chat_stages_active(cfg):
        skip_chat_stage(cfg, "sft-data")
        return None
    planner = flow_planner(cfg, "sft-data", input_path)
    planner.require("ingest", "sft-data")
    plan = planner.plan("sft-data")
    if done := up_to_date(cfg, plan, force):
        return done
    ingest = plan.input("ingest").path
    tokenizer = plan.inputs[1].path  # the tokenizer stage's dataset, or an imported base's tokenizer.json
    if Path(tokenizer).is_dir():
        tokenizer = os.path.join(tokenizer, "tokenizer.json")
    parts = [str(p) for p in parquet_files(ingest, "messages")]
    if not parts:
        raise ValueError(f"sft-data: the ingest dataset {ingest} holds no WhatsApp messages (no WhatsApp input)")
    with plan.writer() as w:
        result = build_sft_examples(parts, tokenizer, cfg.sft_data, str(w.tmp),
                                    clean_rules=cfg.clean.rules if cfg.sft_data.clean else None)
        return publish(cfg, plan, w, result.counts(), result.stats(), force)


# ------------------------------------------------------------------------------------------- sft and lora


def _validation_file(sft_data: str) -> Path | None:
    """The held-out examples, or None (with a warning) when sft-data had too few sessions to hold one out."""
    val = Path(sft_data) / "val.parquet"
    if val.is_file() and count_rows(val) > 0:
        return val
    get_run_logger().warning("%s holds no validation examples (one session of chats?): training without "
                             "validation loss or evaluation", sft_data)
    return None


def _finetune(cfg: PipelineConfig, stage: str, params: training.TrainingParams, sft_data: str | None,
              force: bool) -> str | None:
    if not chat_stages_active(cfg):
        skip_chat_stage(cfg, stage)
        return None
    planner = flow_planner(cfg, stage, input_path=sft_data)
    planner.require_base(stage)
    plan = planner.plan(stage)
    if done := up_to_date(cfg, plan, force):
        return done
    base, sft_data = plan.details["base"], plan.input("sft-data").path
    val = _validation_file(sft_data)
    with plan.writer() as w:
        finished = _train(stage, params, w.tmp, tokenizer_path=data_tokenizer(cfg, sft_data),
                          train_data=Path(sft_data) / "train.parquet", val_data=val, init_from=base)
        table = _evaluation(cfg, plan, w, sft_run=w.tmp if stage == "sft" else None,
                            lora_run=w.tmp if stage == "lora" else None)
        return _publish_run(cfg, plan, w, finished, {"assistant_perplexity": table}, force)


def _evaluation(cfg: PipelineConfig, plan: StagePlan, w, sft_run: Path | None, lora_run: Path | None) -> dict:
    """Held-out Assistant-turn perplexity: base vs SFT vs LoRA (whichever exist), as a table and a dict; paths
    inside the run being written are named where they will be once it is published."""
    from model.evaluation import perplexity_table

    val = _validation_file(plan.input("sft-data").path)
    if val is None:
        return {}
    if sft_run is None:
        sft_path, ok = planned_output(cfg, "sft")
        sft_run = Path(sft_path) if ok else None
    table = perplexity_table(val, data_tokenizer(cfg, plan.input("sft-data").path), base=plan.details["base"],
                             sft=sft_run, lora=lora_run)
    markdown = w.as_published(table.markdown())
    get_run_logger().info("Assistant-turn perplexity on held-out sessions:\n%s", markdown)
    create_markdown_artifact(key="chat-evaluation", markdown="# Assistant-turn perplexity\n\n" + markdown,
                             description="base vs SFT vs LoRA on held-out sessions")
    return w.as_published(table.as_dict())


@flow(name="sft")
def sft_flow(config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None,
             force: bool = False) -> str | None:
    """Full fine-tuning of the pretrain checkpoint on the chat examples; returns the run."""
    cfg = load_config(config)
    return _finetune(cfg, "sft", cfg.sft, input_path, force)


@flow(name="lora")
def lora_flow(config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None,
              force: bool = False) -> str | None:
    """LoRA fine-tuning of the pretrain checkpoint (adapter only); returns the run."""
    cfg = load_config(config)
    return _finetune(cfg, "lora", cfg.lora, input_path, force)
