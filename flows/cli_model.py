"""`chatlike model`: bring an open base model in, send a trained one out (mounted by flows/cli.py).

    chatlike model import ~/hf/SmolLM2-135M --out runs/base/smollm2     # a Hugging Face folder → a checkpoint
    chatlike model export runs/sft --adapter runs/lora --format hf --out export/persona
    chatlike model export runs/sft --format gguf --quant q8_0 --out export/gguf

An export with `--adapter` merges the adapter into its base first (in a temporary folder beside the output,
removed afterwards). Errors are one line on stderr and exit code 2.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import typer

model_app = typer.Typer(add_completion=False, no_args_is_help=True,
                        help="Import a Hugging Face base model; export a checkpoint for Hugging Face or GGUF.")

FORMATS = ("hf", "gguf")
GGUF_QUANTS = ("f16", "q8_0")


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


@model_app.command("import")
def import_model(
    hf_dir: Path = typer.Argument(..., help="A Hugging Face model folder: config.json, *.safetensors, tokenizer.json."),
    out: Path = typer.Option(..., "--out", help="The checkpoint folder to write."),
    dtype: str = typer.Option("float32", "--dtype", help="Weights as float32 or bfloat16."),
) -> None:
    """Convert a Llama, Qwen2 or Mistral model into a chatlike checkpoint (with the chat tokens added)."""
    try:
        from model.hf import import_hf
        from storage.checkpoints import read_state

        checkpoint = import_hf(hf_dir, out, dtype=dtype)
    except (ValueError, OSError) as e:
        _fail(str(e))
        return
    state = read_state(checkpoint) or {}
    source, config = state["imported_from"], state["config"]
    added = ", ".join(source["added_tokens"]) or "none"
    typer.echo(f"{checkpoint}: {source['architecture']}, {config['n_layers']} layers, d_model {config['d_model']}, "
               f"vocabulary {source['vocab_size']} → {config['vocab_size']} (added {added})")


def _export(checkpoint: Path, fmt: str, out: Path, quant: str | None) -> Path:
    if fmt == "hf":
        from model.hf import export_hf

        return export_hf(checkpoint, out)
    try:
        from model.gguf import export_gguf
    except ImportError as e:
        raise ValueError(f"GGUF export is not available here ({e})") from e
    return export_gguf(checkpoint, out, quant=quant or "f16")


@model_app.command("export")
def export_model(
    checkpoint: Path = typer.Argument(..., help="A checkpoint folder, or a run folder (its latest)."),
    out: Path = typer.Option(..., "--out", help="The folder to write."),
    fmt: str = typer.Option("hf", "--format", help="hf (transformers) or gguf (llama.cpp, ollama)."),
    adapter: Path | None = typer.Option(None, "--adapter", help="A LoRA adapter (or LoRA run folder) to merge in."),
    quant: str | None = typer.Option(None, "--quant", help="gguf only: f16 (default) or q8_0."),
) -> None:
    """Write a checkpoint (with an adapter merged in) as a Hugging Face folder or a GGUF file."""
    if fmt not in FORMATS:
        _fail(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    if quant is not None and (fmt != "gguf" or quant not in GGUF_QUANTS):
        _fail(f"--quant {quant!r}: only --format gguf takes one, {' or '.join(GGUF_QUANTS)}")
    from storage.checkpoints import TMP_PREFIX, resolve_checkpoint

    merged = out.parent / f"{TMP_PREFIX}merged-{out.name}-{os.getpid()}"
    try:

        source = resolve_checkpoint(checkpoint)
        if adapter is not None:
            from model.lora import merge_adapter

            source = merge_adapter(source, adapter, merged)
        written = _export(source, fmt, out, quant)
    except (ValueError, OSError) as e:
        _fail(str(e))
        return
    finally:
        shutil.rmtree(merged, ignore_errors=True)
    typer.echo(str(written))


__all__ = ["model_app"]
