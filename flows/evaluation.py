"""The `persona-eval` flow: after sft and lora, the base, SFT and LoRA models (those that exist) answer the
held-out User turns of sft-data with the same history, sampling settings and seed, and `tasks.likeness` measures
how much each answers like the person — who said it, a classifier two-sample test, memorisation, style — beside
the person's real replies and the other participants' turns. Publishes every reply, the figures, the tables and
a chart as a dataset, with a `persona-eval` artifact."""

from __future__ import annotations

import os
import time
from pathlib import Path

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.config import PipelineConfig, load_config
from flows.flow_decorator import flow
from flows.plans import EVALUATED_MODELS, StagePlan, chat_stages_active, flow_planner
from flows.report import png_markdown
from flows.stage_runner import publish, up_to_date
from flows.training import data_tokenizer, skip_chat_stage
from storage.atomic import write_atomic
from storage.dataset import read_manifest
from tasks.likeness import (
    ModelReplies,
    PersonaEvalParams,
    corpus_snippets,
    measure_likeness,
    read_chat_turns,
    read_held_out,
    write_likeness,
)
from tasks.likeness.report import OTHERS_ROW, REAL, LikenessResult, row_label, short_label
from tasks.likeness.stage import PLOT_FILE, TABLE_FILE
from tasks.likeness.texts import hash_sample, word_count


@task(name="generate-replies", cache_policy=NO_CACHE)
def _generate_replies(name: str, checkpoint: str, adapter: str | None, contexts: list[list[dict]], tokenizer: str,
                      params: PersonaEvalParams) -> ModelReplies:
    """One model's replies to every held-out turn (model.evaluation: batched, seeded sampling)."""
    from model.evaluation import held_out_replies

    started = time.perf_counter()
    replies = held_out_replies(checkpoint, adapter, contexts, tokenizer, max_new_tokens=params.max_new_tokens,
                               temperature=params.temperature, top_k=params.top_k, top_p=params.top_p,
                               seed=params.seed, batch_size=params.batch_size, device=params.device)
    seconds = time.perf_counter() - started
    tokens = sum(r.tokens for r in replies)
    get_run_logger().info("persona-eval: %s answered %d held-out turns in %.1f s (%.0f tokens/s)", name,
                          len(replies), seconds, tokens / max(seconds, 1e-9))
    return ModelReplies(name, [r.text for r in replies], [r.finished for r in replies], checkpoint, adapter)


def _perplexities(plan: StagePlan) -> dict[str, float]:
    """Held-out Assistant-turn perplexity of each compared model, from the sft and lora runs' evaluations."""
    out: dict[str, float] = {}
    for ref in plan.inputs:
        if ref.stage in EVALUATED_MODELS:
            table = read_manifest(ref.path).stats.get("assistant_perplexity") or {}
            for name in (ref.stage, "base"):
                if name in table:
                    out.setdefault(name, float(table[name]["perplexity"]))
    return out


@flow(name="persona-eval")
def persona_eval_flow(config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None,
                      force: bool = False) -> str | None:
    """Likeness of the base, SFT and LoRA models to the person on the held-out sessions of sft-data; returns the
    dataset (None when no target author is configured)."""
    cfg = load_config(config)
    if not chat_stages_active(cfg):
        skip_chat_stage(cfg, "persona-eval")
        return None
    planner = flow_planner(cfg, "persona-eval", input_path)
    planner.require_base("persona-eval")
    plan = planner.plan("persona-eval")
    if done := up_to_date(cfg, plan, force):
        return done
    log = get_run_logger()
    params, data = cfg.persona_eval, plan.input("sft-data").path
    held_out = read_held_out(Path(data) / "val.parquet", params.max_prompts, params.seed)
    training = read_chat_turns(Path(data) / "train.parquet")
    person = read_manifest(data).stats.get("target_author") or cfg.sft_data.target_names()[0]
    corpus = corpus_snippets(plan.input("ingest").path,
                             min(params.corpus_snippets, max(len(training.person), len(training.others))),
                             [word_count(t) for t in training.person], params.seed,
                             cfg.clean.rules if cfg.sft_data.clean else None)
    models = plan.details["models"]
    log.info("persona-eval: %s on %d held-out replies of %r (%s)", ", ".join(models), len(held_out), person,
             "no corpus text: two classes" if not corpus else f"{len(corpus)} corpus snippets")
    predictor = plan.details["langid"].predictor()
    with plan.writer() as w:
        tokenizer = data_tokenizer(cfg, data)
        contexts = [list(t.context) for t in held_out]
        replies = [_generate_replies(name, m["checkpoint"], m["adapter"], contexts, tokenizer, params)
                   for name, m in models.items()]
        # as many of the others' held-out turns as replies, so that the rows' distinct-n compare
        others = hash_sample(read_chat_turns(Path(data) / "val.parquet").others, len(held_out), params.seed)
        result = measure_likeness(held_out, others, training, corpus, replies, params,
                                  lambda texts: [g.lang for g in predictor.predict_many(texts)], person=person,
                                  perplexity=_perplexities(plan))
        write_likeness(result, w.tmp)
        likeness_png(result, w.tmp / PLOT_FILE)
        log.info("persona-eval: %s", result.summary())
        counts = {"in": len(held_out), "out": sum(len(r.texts) for r in replies), "models": len(replies)}
        stats = {"summary": result.summary(), "likeness": result.as_dict(),
                 "models": {r.name: {"checkpoint": r.checkpoint, "adapter": r.adapter} for r in replies}}
        path = publish(cfg, plan, w, counts, stats, force)
    _artifact(path, person)
    return path


def likeness_png(result: LikenessResult, path: str | os.PathLike) -> Path:
    """Three panels: share attributed to the person, two-sample AUC per model, reply-length distributions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    names = [r.name for r in result.rows]
    labels = [row_label(n, result.person) for n in names]
    y = list(range(len(names)))[::-1]
    axes[0].barh(y, [r.said_by_person for r in result.rows], color="#3b7dd8")
    axes[0].set_yticks(y, labels)
    axes[0].set_xlim(0, 1)
    axes[0].set_title(f"said by {result.person} (who-said-it)")
    models = [r for r in result.rows if r.name != REAL]
    x = list(range(len(models)))
    axes[1].bar([i - 0.2 for i in x], [r.auc or 0 for r in models], 0.4, label="all replies", color="#e08a2c")
    axes[1].bar([i + 0.2 for i in x], [r.auc_unmemorised or 0 for r in models], 0.4, label="memorised left out",
                color="#8c6bb1")
    axes[1].axhline(0.5, color="grey", linestyle="--", linewidth=1)
    axes[1].set_xticks(x, [short_label(r.name, result.person) for r in models])
    axes[1].set_ylim(0, 1)
    axes[1].set_title(f"C2ST AUC vs {result.person} (0.5 = alike)")
    axes[1].legend(fontsize=8, loc="lower right")
    lengths: dict[str, list[int]] = {}
    for rec in result.records:
        lengths.setdefault(rec["source"], []).append(len(rec["text"]))
    for name in names:
        if name == OTHERS_ROW or name not in lengths:
            continue
        values = sorted(lengths[name])
        axes[2].step(values, [(i + 1) / len(values) for i in range(len(values))], where="post",
                     label=short_label(name, result.person), linewidth=2 if name == REAL else 1)
    axes[2].set_xscale("symlog")
    axes[2].set_title("reply length (characters), CDF")
    axes[2].legend(fontsize=8, loc="lower right")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    out = Path(path)
    write_atomic(out, lambda tmp: fig.savefig(tmp, dpi=90), keep_suffix=True)
    plt.close(fig)
    return out


def _artifact(path: str, person: str) -> None:
    table = Path(path) / TABLE_FILE
    markdown = table.read_text(encoding="utf-8")
    png = Path(path) / PLOT_FILE
    if png.is_file():
        markdown += "\n" + png_markdown(png, f"likeness to {person}") + "\n"
    create_markdown_artifact(key="persona-eval", markdown=f"# Persona likeness\n\n{markdown}\n\nFiles: `{path}`\n",
                             description=f"how much base, SFT and LoRA chat like {person} (held-out sessions)")
