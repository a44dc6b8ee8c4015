"""The README's picture of `chatlike chat --web`: starts the server on a checkpoint, sends messages from a headless
Chromium the way a person does (tests/browser.py), waits for each streamed reply and saves a screenshot.

    .venv/bin/python scripts/chat_web_screenshot.py --checkpoint "$(.venv/bin/chatlike status --path sft)" \\
        --out docs/chat-web.png

Emoji in a reply need a colour emoji font for Chromium (Debian: fonts-noto-color-emoji), or they show as boxes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser import ChatWebProcess, Chromium  # noqa: E402

MESSAGES = ["Hey Sam, are you free on Saturday?", "Great! Shall we meet at the harbour at 10?"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--adapter")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "chat-web.png")
    parser.add_argument("--message", action="append", help="A message to send (repeatable); default: two about Saturday.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--width", type=int, default=900)
    parser.add_argument("--height", type=int, default=500)
    args = parser.parse_args()

    server_args = ["--checkpoint", args.checkpoint, "--port", "0", "--seed", str(args.seed),
                   "--temperature", str(args.temperature)]
    if args.adapter:
        server_args += ["--adapter", args.adapter]
    with tempfile.TemporaryDirectory(prefix="chat-web-screenshot-") as tmp:
        with ChatWebProcess(server_args, Path(tmp)) as server, \
                Chromium(Path(tmp) / "profile", args.width, args.height) as browser:
            browser.goto(server.url + "/")
            browser.wait_for("document.body.dataset.ready === 'true'")
            for i, message in enumerate(args.message or MESSAGES, start=1):
                browser.click("#message")
                browser.type_text(message)
                browser.click("#send")
                bubbles = "[...document.querySelectorAll('.message.assistant')]"
                browser.wait_for(f"{bubbles}.length === {i} && {bubbles}.pop().dataset.state !== 'streaming'",
                                 timeout=120)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            browser.screenshot(args.out)
            replies = browser.evaluate("[...document.querySelectorAll('.message.assistant .text')]"
                                       ".map(e => e.textContent)")
    for message, reply in zip(args.message or MESSAGES, replies, strict=True):
        print(f"you> {message}\nbot> {reply}")
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
