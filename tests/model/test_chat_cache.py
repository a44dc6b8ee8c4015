"""The chat's KV cache outlives a reply: a conversation with the cache kept samples exactly the tokens of one that
re-reads its whole history every turn, for every attention variant, greedy and seeded, also once old turns
have to be dropped; and the kept cache feeds only the new tokens."""

from __future__ import annotations

import pytest
import torch

from model import GPT, ModelConfig
from model.chat import ChatSession, SamplingOptions
from storage.chat_format import ASSISTANT, USER, load_tokenizer, turn_header
from tests.support import tiny_world

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# Untied, with a larger init, so that replies differ from turn to turn (a fresh tied model repeats itself).
BASE = dict(vocab_size=400, block_size=96, d_model=32, n_heads=4, n_layers=2, tie_embeddings=False, init_std=0.1)
VARIANTS = {
    "full-learned": dict(),
    "gqa-rope": dict(position="rope", n_kv_heads=2),
    "sliding-window-alibi": dict(attention="sliding_window", window_size=16, n_sink_tokens=2, position="alibi"),
    "linear": dict(attention="linear", linear_chunk_size=8),
    "mla-rope": dict(attention="mla", position="rope", mla_kv_lora_rank=16),
}
MESSAGES = ["hi", "are you coming tonight?", "ok see you at 8", "bring the bread", "what time?", "lol", "bye"]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(tiny_world().tokenizer)


def converse(model: GPT, tokenizer, options: SamplingOptions, reuse_cache: bool):
    session = ChatSession(model, tokenizer, options, reuse_cache=reuse_cache)
    prefills = []
    for message in MESSAGES:
        session.reply(message)
        prefills.append(session.last_prefill_tokens)
    return session, prefills


@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("sampling", [dict(temperature=0), dict(temperature=1.0, top_p=0.9, seed=5)],
                         ids=["greedy", "seeded"])
def test_kept_cache_samples_the_same_tokens_as_rereading_the_history(name, sampling, tokenizer):
    torch.manual_seed(0)
    model = GPT(ModelConfig(**{**BASE, **VARIANTS[name]})).eval()
    options = SamplingOptions(max_new_tokens=12, **sampling)
    kept, kept_prefills = converse(model, tokenizer, options, reuse_cache=True)
    reread, reread_prefills = converse(model, tokenizer, options, reuse_cache=False)
    assert kept.history == reread.history and kept.turns == reread.turns
    assert len({tuple(ids) for role, ids in kept.history if role == ASSISTANT}) > 1  # not one reply over and over

    # the conversation outgrew the block: old turns were dropped, and the cache rebuilt from the kept ones
    assert sum(map(len, (ids for _, ids in kept.history))) > BASE["block_size"]
    rebuilt = [turn for turn, (a, b) in enumerate(zip(kept_prefills, reread_prefills, strict=True)) if a == b]
    assert rebuilt[0] == 0 and len(rebuilt) > 1
    assert sum(kept_prefills) < sum(reread_prefills)


def test_a_kept_cache_feeds_only_the_end_of_the_reply_and_the_new_turn(tokenizer):
    torch.manual_seed(0)
    model = GPT(ModelConfig(**{**BASE, "block_size": 512})).eval()
    forwarded = []
    model.register_forward_pre_hook(lambda module, args, kwargs: forwarded.append(args[0].shape[1]),
                                    with_kwargs=True)
    options = SamplingOptions(temperature=0, max_new_tokens=6)
    kept = ChatSession(model, tokenizer, options)
    reread = ChatSession(model, tokenizer, options, reuse_cache=False)
    header = turn_header(kept.tokens, ASSISTANT)
    for message in MESSAGES[:4]:
        start = len(forwarded)
        reread.reply(message)
        reread_prefill = forwarded[start]  # the first forward of a reply, then one token per step
        start = len(forwarded)
        kept.reply(message)
        kept_prefill = forwarded[start]
        assert (kept_prefill, reread_prefill) == (kept.last_prefill_tokens, reread.last_prefill_tokens)
        assert reread_prefill == sum(len(ids) for _, ids in reread.history[:-1]) + len(header)  # all of it
        if len(kept.turns) > 2:
            assert not kept.last_reply_finished  # an untrained model talks up to the budget, so the reply before
            # left its last token unfed: that token and <|endoftext|>, then the new User turn and the header
            role, user_turn = kept.history[-2]
            assert role == USER
            assert kept_prefill == 2 + len(user_turn) + len(header) < reread_prefill
    assert kept.history == reread.history


def test_reset_and_option_changes_keep_the_paths_equal(tokenizer):
    torch.manual_seed(0)
    model = GPT(ModelConfig(**{**BASE, **VARIANTS["gqa-rope"]})).eval()
    sessions = [ChatSession(model, tokenizer, SamplingOptions(temperature=1.0, max_new_tokens=10, seed=3),
                            reuse_cache=reuse) for reuse in (True, False)]
    for session in sessions:
        session.reply("hi")
        session.set_options(max_new_tokens=20, temperature=0.7)  # a larger budget: fewer turns fit
        session.reply("again")
        session.reset()
        session.reply("from scratch")
        session.reply("and on")
    assert sessions[0].history == sessions[1].history
