"""The `persona-eval` stage's work, given the models' replies to the held-out turns: who said it, the classifier
two-sample test, memorisation and style for the person's real replies (the ceiling), the other participants'
real turns (the floor) and each model's replies; then the dataset's files (`replies.parquet`, `likeness.json`,
`likeness.md`, `likeness.png`). Generating the replies is the model layer's part (model.evaluation).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pyarrow as pa
from pydantic import Field

from storage.atomic import write_text_atomic
from storage.parquet import ParquetShardWriter
from tasks.base import StrictModel
from tasks.likeness.classifiers import PERSON, ClassifierParams, c2st_auc, train_who_said_it
from tasks.likeness.memorisation import NO_MATCH, MemorisationParams, MemorisedMatch, TrainingMessageIndex
from tasks.likeness.report import OTHERS_ROW, REAL, LikenessResult, LikenessRow
from tasks.likeness.style import style_stats
from tasks.likeness.texts import ChatTurns, HeldOutTurn

STAGE = "persona-eval"
STAGE_VERSION = "1"
MODEL_ORDER = ("base", "sft", "lora")
REPLIES_FILE, METRICS_FILE, TABLE_FILE, PLOT_FILE = "replies.parquet", "likeness.json", "likeness.md", "likeness.png"

REPLY_SCHEMA = pa.schema([
    pa.field("source", pa.string(), nullable=False),  # person, others, base, sft, lora
    pa.field("prompt_id", pa.string()),  # the held-out example answered (null for the others' turns)
    pa.field("user_turn", pa.string()),
    pa.field("text", pa.string(), nullable=False),
    pa.field("finished", pa.bool_()),  # the model ended its turn (null for real text)
    pa.field("said_by", pa.string(), nullable=False),  # who-said-it: person, others or corpus
    pa.field("language", pa.string(), nullable=False),
    pa.field("memorised", pa.string()),  # exact, near or null
    pa.field("similarity", pa.float32(), nullable=False),  # Jaccard with the closest training message found
    pa.field("copied_from", pa.string()),
])


class PersonaEvalParams(StrictModel):
    """How likeness is measured: which held-out turns, how every model samples its replies (the same settings
    and seed for all), the classifiers and when a reply counts as memorised."""

    max_prompts: int = Field(300, ge=1, description="Held-out replies compared at most (a hash sample of them).")
    seed: int = Field(0, description="Seeds the sampling of every model, the samples and the classifiers.")
    temperature: float = Field(0.8, ge=0, description="Sampling temperature (0: greedy).")
    top_k: int | None = Field(50, ge=1)
    top_p: float | None = Field(0.95, gt=0, le=1)
    max_new_tokens: int = Field(64, ge=1, description="Longest reply, in tokens (at most half the block size).")
    batch_size: int = Field(32, ge=1, description="Prompts generated together (part of the sampling: kept in the "
                                                  "fingerprint).")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto: the GPU when there is one.")
    corpus_snippets: int = Field(2000, ge=0, description="'Not this chat' texts for who-said-it, at most "
                                                         "(0: two classes).")
    c2st_folds: int = Field(5, ge=2, description="Cross-validation folds of the two-sample test.")
    classifier: ClassifierParams = Field(default_factory=ClassifierParams)
    memorisation: MemorisationParams = Field(default_factory=MemorisationParams)
    sample_rows: int = Field(8, ge=0, description="Held-out turns shown with every model's reply.")

    def fingerprint_params(self) -> dict:
        params = self.model_dump(mode="json")
        params.pop("device")  # how, not what
        return params


@dataclass(frozen=True)
class ModelReplies:
    """One model's replies to the held-out turns, in their order."""

    name: str
    texts: list[str]
    finished: list[bool]
    checkpoint: str
    adapter: str | None = None


def _share(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def measure_likeness(held_out: Sequence[HeldOutTurn], held_out_others: Sequence[str], training: ChatTurns,
                     corpus: Sequence[str], models: Sequence[ModelReplies], params: PersonaEvalParams,
                     language_of: Callable[[list[str]], list[str]], *, person: str = "the person",
                     perplexity: dict[str, float] | None = None) -> LikenessResult:
    """Every likeness figure for the person's real held-out replies, the others' real held-out turns and each
    model's replies to the same turns. `language_of` gives the language of each text (the langid predictor)."""
    if not held_out:
        raise ValueError("persona-eval: no held-out replies to compare with")
    if not training.person:
        raise ValueError("persona-eval: the training sessions hold no turn of the person")
    for m in models:
        if len(m.texts) != len(held_out):
            raise ValueError(f"persona-eval: {m.name} has {len(m.texts)} replies for {len(held_out)} held-out turns")
    cp, seed = params.classifier, params.seed
    who = train_who_said_it(training.person, training.others, corpus, cp, seed)
    index = TrainingMessageIndex([*training.person, *training.others], params.memorisation)

    real = [t.reply for t in held_out]
    prompt_ids = [t.prompt_id for t in held_out]
    sets: list[tuple[str, list[str], list[str] | None, list[bool] | None]] = [
        (REAL, real, prompt_ids, None), (OTHERS_ROW, list(held_out_others), None, None),
        *((m.name, m.texts, prompt_ids, m.finished) for m in models),
    ]
    langs = {name: language_of(list(texts)) for name, texts, _, _ in sets}
    rows: list[LikenessRow] = []
    records: list[dict] = []
    for name, texts, groups, finished in sets:
        said_by = who.predict(texts)
        matches: list[MemorisedMatch] = index.match(texts) if texts else []
        kept = [i for i, m in enumerate(matches) if not m.memorised]
        is_model = name not in (REAL, OTHERS_ROW)
        auc = auc_unmemorised = None
        if name != REAL:
            auc = c2st_auc(real, texts, cp, folds=params.c2st_folds, seed=seed, real_groups=prompt_ids,
                           generated_groups=groups)
            auc_unmemorised = auc if len(kept) == len(texts) else c2st_auc(
                real, [texts[i] for i in kept], cp, folds=params.c2st_folds, seed=seed, real_groups=prompt_ids,
                generated_groups=[groups[i] for i in kept] if groups else None)
        rows.append(LikenessRow(
            name=name, replies=len(texts),
            said_by_person=_share([s == PERSON for s in said_by]),
            said_by_person_unmemorised=_share([said_by[i] == PERSON for i in kept]) if kept else None,
            auc=auc, auc_unmemorised=auc_unmemorised,
            memorised=_share([m.memorised for m in matches]),
            memorised_exact=_share([m.kind == "exact" for m in matches]),
            finished=_share(finished) if finished is not None else None,
            style=style_stats(texts, langs[name], real, langs[REAL]),
            perplexity=(perplexity or {}).get(name) if is_model else None,
        ))
        for i, text in enumerate(texts):
            match = matches[i] if matches else NO_MATCH
            records.append({
                "source": name, "prompt_id": groups[i] if groups else None,
                "user_turn": held_out[i].user_turn if groups else None, "text": text,
                "finished": finished[i] if finished is not None else None, "said_by": said_by[i],
                "language": langs[name][i], "memorised": match.kind, "similarity": float(match.similarity),
                "copied_from": match.source,
            })
    return LikenessResult(
        person=person, held_out=len(held_out), sessions=len({(t.chat_id, t.session) for t in held_out}),
        classes=who.labels, training_turns={"person": len(training.person), "others": len(training.others),
                                            "corpus": len(corpus)},
        rows=rows, samples=_samples(held_out, models, params.sample_rows), records=records,
        settings={k: v for k, v in params.model_dump(mode="json").items()
                  if k in ("seed", "temperature", "top_k", "top_p", "max_new_tokens", "batch_size")},
    )


def _samples(held_out: Sequence[HeldOutTurn], models: Sequence[ModelReplies], n: int) -> list[dict]:
    """`n` held-out turns spread over the set, with the person's reply and every model's."""
    if n <= 0:
        return []
    picks = sorted({round(i * (len(held_out) - 1) / max(n - 1, 1)) for i in range(min(n, len(held_out)))})
    return [{"prompt_id": held_out[i].prompt_id, "user_turn": held_out[i].user_turn, REAL: held_out[i].reply,
             **{m.name: m.texts[i] for m in models}} for i in picks]


def write_likeness(result: LikenessResult, out_dir: str | os.PathLike) -> dict[str, Path]:
    """The dataset's files: every reply with its labels (Parquet), the figures (JSON) and the tables (markdown).
    The chart (`PLOT_FILE`) is drawn by the flow (matplotlib is no library of this layer)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"replies": out / REPLIES_FILE, "metrics": out / METRICS_FILE, "table": out / TABLE_FILE}
    with ParquetShardWriter(paths["replies"], REPLY_SCHEMA) as writer:
        writer.write_rows(result.records)
    write_text_atomic(paths["metrics"], json.dumps(result.as_dict(), indent=2, ensure_ascii=False) + "\n")
    write_text_atomic(paths["table"], result.markdown())
    return paths
