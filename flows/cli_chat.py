"""`chatlike chat`: talk to a trained model in the terminal (mounted by flows/cli.py as the `chat` command).

    chatlike chat --checkpoint runs/sft [--adapter runs/lora] [--once "are you coming tonight?"]

Interactive by default (`/reset` forgets the conversation, `/quit` or Ctrl-D leaves); `--once` prints one reply
and exits, for scripts. Errors are one line on stderr and exit code 2.
"""

from __future__ import annotations

from pathlib import Path

import typer

chat_app = typer.Typer(add_completion=False, help="Chat with a trained model in the terminal.")


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


@chat_app.callback(invoke_without_command=True)
def chat(
    checkpoint: Path = typer.Option(..., "--checkpoint", help="A checkpoint folder, or a run folder (its latest)."),
    adapter: Path | None = typer.Option(None, "--adapter", help="A LoRA adapter (or LoRA run folder) for it."),
    tokenizer: Path | None = typer.Option(
        None, "--tokenizer", help="tokenizer.json; default: the checkpoint's own, else the one its state.json records."
    ),
    temperature: float = typer.Option(0.8, "--temperature", help="0 is greedy."),
    top_k: int = typer.Option(50, "--top-k", help="Sample among the k most likely tokens (0: all)."),
    top_p: float = typer.Option(0.95, "--top-p", help="Nucleus sampling mass (1: off)."),
    max_new_tokens: int = typer.Option(128, "--max-new-tokens", help="Longest reply in tokens."),
    seed: int | None = typer.Option(None, "--seed", help="Fix the sampling for reproducible replies."),
    once: str | None = typer.Option(None, "--once", help="Reply to this one message and exit."),
    device: str = typer.Option("auto", "--device", help="auto, cpu or cuda."),
) -> None:
    """Multi-turn chat; the history is kept within the model's block size (oldest turns go first)."""
    from model.chat import SamplingOptions, load_chat

    try:
        options = SamplingOptions(temperature, top_k or None, top_p, max_new_tokens, seed)
        session, info = load_chat(checkpoint, adapter, tokenizer, device, options)
    except (ValueError, FileNotFoundError, OSError) as e:
        _fail(str(e))
        return
    if once is not None:
        typer.echo(session.reply(once))
        return
    where = info["checkpoint"] + (f" + {info['adapter']}" if info["adapter"] else "")
    typer.echo(f"chatting with {where} (block of {session.block_size} tokens); /reset forgets, /quit or Ctrl-D leaves")
    try:
        while True:
            message = input("you> ")
            if message.strip() in ("/quit", "/exit"):
                return
            if message.strip() == "/reset":
                session.reset()
                typer.echo("(conversation forgotten)")
            elif message.strip():
                typer.echo(f"bot> {session.reply(message)}")
    except (EOFError, KeyboardInterrupt):
        typer.echo("")
