"""The chat format that the sft-data stage writes and the model trains and chats on (DESIGN §4 sft-data), and
how a tokenizer that knows its special tokens is loaded. Shared by data stages and model, so it needs no torch.

A turn is `<|startoftext|>` + the role ("User" or "Assistant", as text) + `<|separator|>` + the text +
`<|endoftext|>`; an example is its turns one after another. By default only an Assistant turn's text and its
`<|endoftext|>` are trained: the User turns, the role names and the special tokens around them are context
(mask 0). `train_on="all"` trains every token.

The special ids always come from the tokenizer, and texts are encoded with special-token matching off: load the
tokenizer with `load_tokenizer`, which sets `encode_special_tokens`, so a message that contains "<|endoftext|>"
stays plain text (that flag is not stored in `tokenizer.json`; a bare `Tokenizer.from_file` would match it).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

TOKENIZER_FILE = "tokenizer.json"
BOS, SEP, EOT, PAD = "<|startoftext|>", "<|separator|>", "<|endoftext|>", "<|pad|>"
SPECIAL_TOKENS: tuple[str, ...] = (BOS, SEP, EOT, PAD)
USER, ASSISTANT = "User", "Assistant"
ROLES = (USER, ASSISTANT)
TRAIN_ON = ("assistant", "all")


# ------------------------------------------------------------------------------------------------------------
# the tokenizer


def tokenizer_file(path: str | os.PathLike) -> Path:
    """`tokenizer.json` itself, given the file or the tokenizer dataset's folder."""
    path = Path(path)
    if path.is_dir():
        path = path / TOKENIZER_FILE
    if not path.is_file():
        raise ValueError(f"{path}: no tokenizer file (run the tokenizer stage first)")
    return path


def load_tokenizer(path: str | os.PathLike) -> Tokenizer:
    """Load a trained `tokenizer.json` the way the pipeline uses it: special strings in text stay plain text."""
    path = tokenizer_file(path)
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as e:  # the library raises its own exception types for malformed JSON
        raise ValueError(f"{path}: not a HuggingFace tokenizer.json ({e})") from e
    missing = [s for s in SPECIAL_TOKENS if tok.token_to_id(s) is None]
    if missing:
        raise ValueError(f"{path}: tokenizer lacks the special token(s) {', '.join(missing)}")
    tok.encode_special_tokens = True
    return tok


# The same format as a Jinja chat template, for the tools that run an exported model (transformers'
# `apply_chat_template`, llama.cpp, the GGUF `tokenizer.chat_template`): roles "user" and "assistant" become
# "User" and "Assistant"; any other role is an error rather than a silent relabelling.
JINJA_CHAT_TEMPLATE = "".join([
    "{%- for message in messages -%}",
    f"{{%- if message['role'] == 'user' -%}}{{%- set role = '{USER}' -%}}",
    f"{{%- elif message['role'] == 'assistant' -%}}{{%- set role = '{ASSISTANT}' -%}}",
    "{%- else -%}{{ raise_exception(\"chatlike's chat format has the roles 'user' and 'assistant', not '\" "
    "+ message['role'] + \"'\") }}{%- endif -%}",
    f"{{{{ '{BOS}' + role + '{SEP}' + message['content'] + '{EOT}' }}}}",
    "{%- endfor -%}",
    f"{{%- if add_generation_prompt -%}}{{{{ '{BOS}{ASSISTANT}{SEP}' }}}}{{%- endif -%}}",
])


# ------------------------------------------------------------------------------------------------------------
# turns


@dataclass(frozen=True)
class ChatTokens:
    """The ids the chat format is made of, read from one tokenizer."""

    bos: int
    sep: int
    eot: int
    pad: int
    roles: Mapping[str, tuple[int, ...]]

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> ChatTokens:
        ids = {s: tokenizer.token_to_id(s) for s in (BOS, SEP, EOT, PAD)}
        missing = [s for s, i in ids.items() if i is None]
        if missing:
            raise ValueError(f"the tokenizer lacks the special token(s) {', '.join(missing)} the chat format needs")
        roles = {r: tuple(tokenizer.encode(r, add_special_tokens=False).ids) for r in ROLES}
        return cls(ids[BOS], ids[SEP], ids[EOT], ids[PAD], roles)


def _role_and_text(turn: Mapping[str, str] | Sequence[str]) -> tuple[str, str]:
    role, text = (turn["role"], turn["text"]) if isinstance(turn, Mapping) else turn
    if role not in ROLES:
        raise ValueError(f"unknown chat role {role!r}; expected one of {', '.join(ROLES)}")
    return role, text


def format_turns(turns: Iterable[Mapping[str, str] | Sequence[str]]) -> str:
    """The readable text of an example (the `text` column); train from the turns, never from this string."""
    return "".join(f"{BOS}{role}{SEP}{text}{EOT}" for role, text in map(_role_and_text, turns))


def turn_header(tokens: ChatTokens, role: str) -> list[int]:
    """`<|startoftext|>` role `<|separator|>`: what precedes a turn's text (and what a prompt ends with)."""
    return [tokens.bos, *tokens.roles[role], tokens.sep]


def encode_turn(tokenizer: Any, role: str, text: str, train_on: str = "assistant",
                tokens: ChatTokens | None = None) -> tuple[list[int], list[int]]:
    """Ids of one turn and its loss mask (1 = this token is a training target)."""
    if train_on not in TRAIN_ON:
        raise ValueError(f"train_on={train_on!r} is not one of {', '.join(TRAIN_ON)}")
    tokens = tokens or ChatTokens.from_tokenizer(tokenizer)
    header = turn_header(tokens, role)
    body = [*tokenizer.encode(text, add_special_tokens=False).ids, tokens.eot]
    if train_on == "all":
        return header + body, [1] * (len(header) + len(body))
    trained = int(role == ASSISTANT)
    return header + body, [0] * len(header) + [trained] * len(body)


def encode_example(tokenizer: Any, turns: Iterable[Mapping[str, str] | Sequence[str]],
                   train_on: str = "assistant") -> tuple[list[int], list[int]]:
    """Ids of a whole example and its per-token loss mask: with train_on="assistant" (the default) exactly the
    Assistant turns' text and `<|endoftext|>` are 1; with "all", every token. Turns are {"role", "text"} dicts
    (the Parquet `turns` column) or (role, text) pairs."""
    tokens = ChatTokens.from_tokenizer(tokenizer)
    ids: list[int] = []
    mask: list[int] = []
    for role, text in map(_role_and_text, turns):
        turn_ids, turn_mask = encode_turn(tokenizer, role, text, train_on, tokens)
        ids += turn_ids
        mask += turn_mask
    return ids, mask


def assistant_prompt(tokenizer: Any, turns: Iterable[Mapping[str, str] | Sequence[str]]) -> list[int]:
    """The conversation so far followed by an open Assistant header: what generation continues."""
    ids, _ = encode_example(tokenizer, turns)
    return ids + turn_header(ChatTokens.from_tokenizer(tokenizer), ASSISTANT)


__all__ = [
    "ASSISTANT", "BOS", "EOT", "JINJA_CHAT_TEMPLATE", "PAD", "ROLES", "SEP", "SPECIAL_TOKENS", "TOKENIZER_FILE", "TRAIN_ON", "USER",
    "ChatTokens", "assistant_prompt", "encode_example", "encode_turn", "format_turns", "load_tokenizer",
    "tokenizer_file", "turn_header",
]
