"""`chatlike chat`: one reply with --once, the history kept within the block, and one-line errors."""

from __future__ import annotations

import pytest
import torch
from typer.testing import CliRunner

from flows.cli_chat import chat_app
from model.chat import SamplingOptions, load_chat
from model.train import train
from storage.chat_format import ASSISTANT, ChatTokens, turn_header
from tasks.training import LoraParams, PretrainParams, SftParams
from tests.support import pretrained_checkpoint, quiet_params, run_config

runner = CliRunner()


@pytest.fixture(scope="module")
def sft_run(tmp_path_factory):
    torch.set_num_threads(1)
    run_dir = tmp_path_factory.mktemp("chat") / "sft"
    params = quiet_params(SftParams, max_steps=30, learning_rate=3e-3, min_lr=3e-4, checkpoint_interval=30)
    return train(run_config("sft", run_dir, params, init_from=pretrained_checkpoint()))


def test_once_prints_one_reply(sft_run):
    args = ["--checkpoint", sft_run.run_dir, "--once", "Are we still on for Saturday?", "--temperature", "0",
            "--max-new-tokens", "12"]
    result = runner.invoke(chat_app, args)
    assert result.exit_code == 0, result.output
    reply = result.output[:-1]  # typer.echo adds one newline
    assert reply.strip()
    assert runner.invoke(chat_app, args).output == result.output  # greedy: the same reply again
    session, _ = load_chat(sft_run.run_dir, options=SamplingOptions(temperature=0, max_new_tokens=12))
    assert session.reply("Are we still on for Saturday?") == reply
    assert not session.last_reply_finished  # this barely trained model babbles up to the budget


def test_a_reply_stops_at_the_end_token(sft_run):
    session, _ = load_chat(sft_run.checkpoint, options=SamplingOptions(temperature=1.0, max_new_tokens=20, seed=0))
    model, eot = session.model, session.tokens.eot
    with torch.no_grad():  # make <|endoftext|> the only likely next token, whatever came before
        model.norm.weight.zero_()
        model.embed_tokens.weight[eot] = torch.randn(model.config.d_model) * 5
        model.norm.bias.copy_(model.embed_tokens.weight[eot])
    assert session.reply("hi") == ""
    assert session.last_reply_finished
    assert session.turns == [{"role": "User", "text": "hi"}, {"role": "Assistant", "text": ""}]


def test_history_is_trimmed_oldest_first(sft_run):
    session, _ = load_chat(sft_run.checkpoint, options=SamplingOptions(temperature=1.0, max_new_tokens=32, seed=0))
    for i in range(12):
        session.reply(f"m{i}")
    prompt = session.prompt_ids()
    assert len(prompt) + session.max_new_tokens - 1 <= session.block_size
    assert prompt[-len(turn_header(session.tokens, ASSISTANT)):] == turn_header(session.tokens, ASSISTANT)
    kept = [ids for _, ids in session.history]
    while sum(map(len, kept)) > len(prompt) - len(turn_header(session.tokens, ASSISTANT)):
        kept.pop(0)  # what should remain: the newest turns that fit
    assert prompt == [t for ids in kept for t in ids] + turn_header(session.tokens, ASSISTANT)
    assert 2 <= len(kept) < len(session.history)

    session.reset()
    long_message = "word " * 500
    session.history.append(("User", session._turn_ids("User", long_message)))
    prompt = session.prompt_ids()
    assert len(prompt) == session.block_size - session.max_new_tokens + 1
    assert prompt[0] == ChatTokens.from_tokenizer(session.tokenizer).bos


def test_chat_with_an_adapter(sft_run, tmp_path):
    lora = train(run_config("lora", tmp_path / "lora", quiet_params(LoraParams, max_steps=2, rank=2),
                            init_from=pretrained_checkpoint()))
    result = runner.invoke(chat_app, ["--checkpoint", str(pretrained_checkpoint()), "--adapter", lora.run_dir,
                                      "--once", "hi", "--seed", "3", "--max-new-tokens", "8"])
    assert result.exit_code == 0, result.output


def test_errors_are_one_line_and_exit_code_2(sft_run, tmp_path):
    result = runner.invoke(chat_app, ["--checkpoint", str(tmp_path / "missing"), "--once", "hi"])
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0 and "missing: no such checkpoint" in result.stderr

    lora = train(run_config("lora", tmp_path / "lora", quiet_params(LoraParams, max_steps=2, rank=2),
                            init_from=pretrained_checkpoint()))
    other = train(run_config("pretrain", tmp_path / "other", quiet_params(PretrainParams, max_steps=2, seed=5)))
    result = runner.invoke(chat_app, ["--checkpoint", other.checkpoint, "--adapter", lora.checkpoint, "--once", "hi"])
    assert result.exit_code == 2 and "is for another base model" in result.stderr
    assert result.stderr.strip().count("\n") == 0

    result = runner.invoke(chat_app, ["--checkpoint", sft_run.checkpoint, "--temperature", "-1", "--once", "hi"])
    assert result.exit_code == 2 and "temperature" in result.stderr


def test_interactive_session_reads_until_quit(sft_run):
    result = runner.invoke(chat_app, ["--checkpoint", sft_run.checkpoint, "--seed", "0", "--max-new-tokens", "8"],
                           input="hello\n/reset\nbye\n/quit\n")
    assert result.exit_code == 0, result.output
    assert result.output.count("bot> ") == 2 and "(conversation forgotten)" in result.output


def test_stream_yields_the_reply_as_it_comes_and_records_it(sft_run):
    options = SamplingOptions(temperature=1.0, max_new_tokens=24, seed=7)
    streamed, _ = load_chat(sft_run.checkpoint, options=options)
    whole, _ = load_chat(sft_run.checkpoint, options=options)
    for message in ("hi", "are you coming tonight?"):
        pieces = list(streamed.stream(message))
        assert len(pieces) > 1 and all(pieces)
        assert "".join(pieces) == whole.reply(message)
    assert streamed.turns == whole.turns and streamed.history == whole.history


def test_a_character_split_across_tokens_is_yielded_whole(sft_run, monkeypatch):
    session, _ = load_chat(sft_run.checkpoint)
    tok = session.tokenizer
    byte_ids = [tok.token_to_id(c) for c in "Ã©"]  # byte-level BPE: "é" is the bytes C3 A9
    planned = [*tok.encode("ok", add_special_tokens=False).ids, *byte_ids, tok.token_to_id("!"), session.tokens.eot]

    def scripted(model, cache, ids, max_new_tokens, **_):
        yield from (torch.tensor([t]) for t in planned)

    monkeypatch.setattr("model.chat.sample_tokens", scripted)
    pieces = list(session.stream("hi"))
    assert "".join(pieces) == "oké!" and not any("\ufffd" in p for p in pieces)
    assert pieces[-2:] == ["é", "!"]  # nothing shown after C3 alone
    assert session.history[-1][1][-len(planned):] == planned  # the sampled ids, ended by <|endoftext|>
    assert session.last_reply_finished


def test_a_stream_closed_early_keeps_what_was_said(sft_run):
    session, _ = load_chat(sft_run.checkpoint, options=SamplingOptions(temperature=1.0, max_new_tokens=24, seed=1))
    stream = session.stream("hi")
    first = next(stream)
    stream.close()
    assert session.turns == [{"role": "User", "text": "hi"}, {"role": "Assistant", "text": first}]
    assert not session.last_reply_finished
    assert session.reply("and now?")  # the conversation goes on from there


def test_options_change_between_turns(sft_run):
    session, _ = load_chat(sft_run.checkpoint, options=SamplingOptions(temperature=1.0, max_new_tokens=8, seed=0))
    session.reply("hi")
    assert session.set_options(temperature=0, top_p=0.5, top_k=None).temperature == 0
    session.reply("again")
    assert [o.temperature for o in session.reply_options] == [1.0, 0]
    with pytest.raises(ValueError, match="top_p"):
        session.set_options(top_p=2)
    with pytest.raises(ValueError, match="unknown sampling option"):
        session.set_options(temprature=1)
    assert session.options.top_p == 0.5  # a refused change changes nothing


def test_session_options_are_checked():
    with pytest.raises(ValueError, match="top_p"):
        SamplingOptions(top_p=0).validate()
    with pytest.raises(ValueError, match="max_new_tokens"):
        SamplingOptions(max_new_tokens=0).validate()
