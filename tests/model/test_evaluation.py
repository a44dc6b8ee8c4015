"""Replies to held-out turns (model.evaluation): the prompt keeps the newest turns that fit, and a seeded
batched generation gives each conversation one reply, the same again under the same seed."""

from __future__ import annotations

from model.evaluation import held_out_replies, reply_prompt
from storage.chat_format import (
    ASSISTANT,
    ChatTokens,
    assistant_prompt,
    encode_turn,
    load_tokenizer,
    turn_header,
)
from tests.support import pretrained_checkpoint, tiny_world

TURNS = [{"role": "User", "text": "Hey Sam, are you free on Saturday?"},
         {"role": "Assistant", "text": "Yes! What's the plan?"},
         {"role": "User", "text": "Dinner at Alex's, around 8"}]


def test_reply_prompt_keeps_the_newest_whole_turns_that_fit():
    tok = load_tokenizer(tiny_world().tokenizer)
    whole = assistant_prompt(tok, TURNS)
    assert reply_prompt(tok, TURNS, budget=len(whole)) == whole  # everything fits: the format's own prompt
    last_only = assistant_prompt(tok, TURNS[-1:])
    assert reply_prompt(tok, TURNS, budget=len(whole) - 1) in (last_only, assistant_prompt(tok, TURNS[1:]))
    assert len(reply_prompt(tok, TURNS, budget=len(whole) - 1)) <= len(whole) - 1
    tokens = ChatTokens.from_tokenizer(tok)
    reply_header, user_header = turn_header(tokens, ASSISTANT), turn_header(tokens, "User")
    budget = len(reply_header) + len(user_header) + 4  # the newest turn alone is too long: its header and its end
    last = encode_turn(tok, "User", TURNS[-1]["text"])[0]
    assert reply_prompt(tok, TURNS, budget) == user_header + last[-4:] + reply_header
    assert reply_prompt(tok, TURNS, len(reply_header) + 2) == reply_header  # not even that: the header alone


def test_held_out_replies_are_one_per_conversation_and_seeded(one_torch_thread):
    world = tiny_world()
    contexts = [TURNS, TURNS[:1], TURNS * 4]
    kwargs = dict(max_new_tokens=12, temperature=0.8, top_k=50, top_p=0.95, batch_size=2, device="cpu")
    first = held_out_replies(pretrained_checkpoint(), None, contexts, world.tokenizer, seed=3, **kwargs)
    again = held_out_replies(pretrained_checkpoint(), None, contexts, world.tokenizer, seed=3, **kwargs)
    assert len(first) == 3 and first == again
    assert all(0 < r.tokens <= 12 or (r.tokens == 0 and r.finished) for r in first)
    assert all(r.finished == (r.tokens < 12) for r in first)
    assert all(r.text == r.text.strip() and "<|" not in r.text for r in first)
