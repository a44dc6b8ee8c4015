"""`chatlike chat`: talk to a trained model in the terminal (mounted by flows/cli.py as the `chat` command).

    chatlike chat --checkpoint runs/sft [--adapter runs/lora] [--once "are you coming tonight?"]

Interactive by default: replies are printed as they are sampled, and lines starting with `/` are commands
(`/help` lists them; Ctrl-C stops a reply, `/quit` or Ctrl-D leaves). `--once` prints one reply and exits, for
scripts. `--web` serves the same chat as a page in the browser instead (flows/chat_web.py). Errors are one line on
stderr and exit code 2.
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

chat_app = typer.Typer(add_completion=False, help="Chat with a trained model in the terminal.")

COMMANDS = """\
/reset          forget the conversation
/temp X         sampling temperature (0 = greedy)
/top_p X        nucleus sampling mass (1 = off)
/top_k N        sample among the N most likely tokens (0 = all)
/save [PATH]    write the transcript (.md: Markdown, else JSON lines)
/help           this list
/quit           leave (Ctrl-D too)"""


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def _print_reply(session, message: str) -> None:
    """Print the reply piece by piece as it is sampled; Ctrl-C stops it (what was said so far is kept)."""
    pieces = session.stream(message)
    try:
        for piece in pieces:
            typer.echo(piece, nl=False)  # click flushes after every echo
    except KeyboardInterrupt:
        typer.echo(" [stopped]", nl=False)
    finally:
        pieces.close()  # records the reply so far, wherever the interrupt landed
    typer.echo("")


def _option_value(command: str, argument: str) -> dict:
    name = {"/temp": "temperature", "/top_p": "top_p", "/top_k": "top_k"}[command]
    if not argument:
        raise ValueError(f"{command} needs a value, e.g. {command} {'40' if name == 'top_k' else '0.7'}")
    try:
        value = int(argument) if name == "top_k" else float(argument)
    except ValueError:
        raise ValueError(f"{command} {argument}: not a number") from None
    if name == "top_k" and value == 0:
        return {"top_k": None}
    return {name: value}


def _run_command(line: str, session, info: dict) -> bool:
    """Carry out one /command; False when it asks to leave."""
    from model.chat import save_transcript

    command, _, argument = line.partition(" ")
    argument = argument.strip()
    if command in ("/quit", "/exit"):
        return False
    if command == "/reset":
        session.reset()
        typer.echo("(conversation forgotten)")
    elif command == "/help":
        typer.echo(COMMANDS)
    elif command in ("/temp", "/top_p", "/top_k"):
        try:
            options = session.set_options(**_option_value(command, argument))
        except ValueError as e:
            typer.echo(f"error: {e}")
        else:
            typer.echo(f"(temperature={options.temperature}, top_k={options.top_k}, top_p={options.top_p})")
    elif command == "/save":
        path = Path(argument or f"chat-{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
        try:
            written = save_transcript(session, info, path)
        except OSError as e:
            typer.echo(f"error: cannot write {path}: {e}")
        else:
            typer.echo(f"(saved {len(session.turns)} turns to {written})")
    else:
        typer.echo(f"unknown command {command}; /help lists them")
    return True


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
    repetition_penalty: float = typer.Option(
        1.0, "--repetition-penalty", help="Make the reply's own earlier tokens less likely (1: off; 1.1-1.3 typical)."
    ),
    no_repeat_ngram: int = typer.Option(
        0, "--no-repeat-ngram", help="Never repeat an n-gram of tokens within a reply (0: off)."
    ),
    max_new_tokens: int = typer.Option(128, "--max-new-tokens", help="Longest reply in tokens."),
    seed: int | None = typer.Option(None, "--seed", help="Fix the sampling for reproducible replies."),
    once: str | None = typer.Option(None, "--once", help="Reply to this one message and exit."),
    web: bool = typer.Option(False, "--web", help="Chat in the browser instead: serve the chat page (Ctrl-C stops)."),
    host: str = typer.Option("127.0.0.1", "--host", help="With --web: the interface to listen on (loopback unless "
                             "--allow-remote)."),
    allow_remote: bool = typer.Option(False, "--allow-remote", help="With --web: let --host be an address other "
                                      "machines reach, although the page has no login."),
    port: int = typer.Option(8765, "--port", help="With --web: the port to listen on (0: any free one)."),
    name: str | None = typer.Option(None, "--name", help="With --web: the name shown for the model; default: the "
                                    "person it was fine-tuned on (from its lineage), else Assistant."),
    device: str = typer.Option("auto", "--device", help="auto, cpu or cuda."),
    dtype: str = typer.Option(
        "auto", "--dtype", help="auto (bfloat16 on a CUDA device that supports it, else float32), float32, "
        "bfloat16 or float16 (CUDA only)."
    ),
) -> None:
    """Multi-turn chat; the history is kept within the model's block size (oldest turns go first)."""
    from model.chat import SamplingOptions, load_chat

    if web and once is not None:
        _fail("--web and --once exclude each other")
    if web:
        from flows.chat_web import CHAT_EXPOSES, CHAT_PROTECT
        from flows.serve import exposure_warning
        from flows.shutdown import stop_on_signals

        try:
            exposure_warning(host, port, allow_remote, CHAT_EXPOSES, CHAT_PROTECT)
        except ValueError as e:
            _fail(str(e))
        stop_on_signals()  # while the model loads; the server has its own handlers while it serves
    try:
        options = SamplingOptions(temperature, top_k or None, top_p, max_new_tokens, seed,
                                  repetition_penalty, no_repeat_ngram).validate()
        session, info = load_chat(checkpoint, adapter, tokenizer, device, options, dtype)
    except (ValueError, FileNotFoundError, OSError) as e:
        _fail(str(e))
        return
    if once is not None:
        _print_reply(session, once)
        return
    if web:
        from flows.chat_web import serve_chat

        try:
            serve_chat(session, info, host, port, name, allow_remote)
        except (OSError, ValueError) as e:
            _fail(str(e))
        return
    where = info["checkpoint"] + (f" + {info['adapter']}" if info["adapter"] else "")
    typer.echo(f"chatting with {where} ({info['dtype']}, block of {session.block_size} tokens); "
               f"/help lists the commands, /quit or Ctrl-D leaves")
    try:
        while True:
            line = input("you> ").strip()
            if line.startswith("/"):
                if not _run_command(line, session, info):
                    return
            elif line:
                typer.echo("bot> ", nl=False)
                _print_reply(session, line)
    except (EOFError, KeyboardInterrupt):
        typer.echo("")
