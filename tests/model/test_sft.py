"""SFT: which tokens are trained (masks and padded batches), the resumable batch order, and full fine-tuning
from a pretrain checkpoint lowering the Assistant-turn loss on held-out chats."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from model import load_model
from model.checkpoint import load_config
from model.evaluation import evaluate_assistant_perplexity
from model.sft import SftBatchStream, SftExamples, masked_nll, shift_labels, width_multiple
from model.train import CheckpointMismatch, train
from storage.chat_format import encode_example, load_tokenizer
from storage.parquet import ParquetShardWriter
from tasks.sft_data import SFT_SCHEMA
from tasks.training import SftParams
from tests.support import pretrained_checkpoint, quiet_params, run_config, tiny_world

TURNS = [
    {"role": "User", "text": "are you coming? <|endoftext|>"},
    {"role": "Assistant", "text": "yes!"},
    {"role": "User", "text": "great"},
    {"role": "Assistant", "text": "see you at 8"},
]


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(tiny_world().tokenizer)


def _pieces(tok, role, text):
    """(header ids, text ids) of one turn."""
    return ([tok.token_to_id("<|startoftext|>"), *tok.encode(role, add_special_tokens=False).ids,
             tok.token_to_id("<|separator|>")], tok.encode(text, add_special_tokens=False).ids)


def test_only_assistant_text_and_its_end_token_are_trained(tok):
    ids, mask = encode_example(tok, TURNS)
    eot = tok.token_to_id("<|endoftext|>")
    expected_ids, expected_mask = [], []
    for turn in TURNS:
        header, text = _pieces(tok, turn["role"], turn["text"])
        trained = int(turn["role"] == "Assistant")
        expected_ids += header + text + [eot]
        expected_mask += [0] * len(header) + [trained] * (len(text) + 1)
    assert ids == expected_ids and mask == expected_mask
    assert ids.count(eot) == 4  # the "<|endoftext|>" typed by the user stays text

    x, y = shift_labels(ids, mask)
    trained_targets = [t for t in y if t != -100]
    reply_1 = _pieces(tok, "Assistant", "yes!")[1] + [eot]
    reply_2 = _pieces(tok, "Assistant", "see you at 8")[1] + [eot]
    assert trained_targets == reply_1 + reply_2
    assert x == ids[:-1]

    all_ids, all_mask = encode_example(tok, TURNS, train_on="all")
    assert all_ids == ids and all(all_mask)


def test_padded_batches_ignore_padding(tmp_path, tok):
    path = tmp_path / "val.parquet"
    rows = [TURNS, TURNS[:2]]
    with ParquetShardWriter(path, SFT_SCHEMA) as w:
        for i, turns in enumerate(rows):
            w.write_row({"example_id": str(i), "chat_id": "c", "session": 0, "text": "", "turns": turns,
                         "n_tokens": 0})
    examples = SftExamples(path, tok, max_tokens=128)
    x, y = examples.batch([0, 1])
    long_ids, long_mask = encode_example(tok, TURNS)
    short_ids, short_mask = encode_example(tok, TURNS[:2])
    assert x.shape == y.shape == (2, len(long_ids) - 1)
    pad = tok.token_to_id("<|pad|>")
    n = len(short_ids) - 1
    assert x[1, :n].tolist() == short_ids[:-1] and (x[1, n:] == pad).all()
    assert y[1, :n].tolist() == shift_labels(short_ids, short_mask)[1] and (y[1, n:] == -100).all()
    assert y[0].tolist() == shift_labels(long_ids, long_mask)[1]
    x, y = examples.batch([1], pad_to=40)
    assert x.shape == (1, 40)

    truncated = SftExamples(path, tok, max_tokens=10)
    assert truncated.truncated == 2 and all(len(i) == 9 for i in truncated.inputs)


def test_gpu_batches_round_their_width_and_lose_nothing(tmp_path, tok):
    """On a GPU batch widths go up in steps of 64 (few shapes, few attention plans), never past the block, and
    the extra padding changes no loss."""
    path = tmp_path / "val.parquet"
    with ParquetShardWriter(path, SFT_SCHEMA) as w:
        for i, turns in enumerate([TURNS, TURNS[:2]]):
            w.write_row({"example_id": str(i), "chat_id": "c", "session": 0, "text": "", "turns": turns,
                         "n_tokens": 0})
    assert width_multiple(torch.device("cpu")) == 1 and width_multiple(torch.device("cuda", 0)) == 64
    examples = SftExamples(path, tok, max_tokens=129)  # block 128
    plain = examples.batch([0, 1])
    assert 8 < plain[0].shape[1] < 64
    rounded = examples.batch([0, 1], multiple=64)
    assert rounded[0].shape == (2, 64)
    assert torch.equal(rounded[0][:, :plain[0].shape[1]], plain[0]) and (rounded[1][:, plain[0].shape[1]:] == -100).all()
    assert examples.batch([0, 1], multiple=100)[0].shape == (2, 100)
    assert examples.batch([0, 1], multiple=1000)[0].shape == (2, 128)  # capped at the block size
    assert examples.batch([0, 1], pad_to=128, multiple=64)[0].shape == (2, 128)

    model = load_model(pretrained_checkpoint()).eval()
    with torch.no_grad():
        a, n_a = masked_nll(model, *plain)
        b, n_b = masked_nll(model, *rounded)
    assert n_a == n_b and torch.allclose(a, b, rtol=1e-5)


def test_batch_stream_is_a_function_of_its_position():
    a = SftBatchStream(10, 4, seed=1)
    batches = [a.next_indices() for _ in range(6)]
    assert all(len(b) == 4 for b in batches)
    assert sorted(set(sum(batches[:3], []))) == list(range(10))  # an epoch covers every example
    b = SftBatchStream(10, 4, seed=1)
    b.load_state_dict({**a.state_dict(), "batches": 3})
    assert [b.next_indices() for _ in range(3)] == batches[3:]
    ranks = [SftBatchStream(10, 2, seed=1, rank=r, world_size=2).next_indices() for r in range(2)]
    assert not set(ranks[0]) & set(ranks[1])
    with pytest.raises(ValueError, match="saved examples=10"):
        SftBatchStream(11, 4, seed=1).load_state_dict(a.state_dict())


def test_sft_lowers_the_assistant_turn_loss(tmp_path):
    torch.set_num_threads(1)
    w = tiny_world()
    base = pretrained_checkpoint()
    params = quiet_params(SftParams, max_steps=30, learning_rate=3e-3, min_lr=3e-4, checkpoint_interval=30,
                          eval_interval=15, sample_interval=15)
    result = train(run_config("sft", tmp_path / "sft", params, init_from=base))
    assert {p.name for p in (tmp_path / "sft" / "step-000030").iterdir()} >= {"model.safetensors", "optimizer.pt"}

    before = evaluate_assistant_perplexity(base, sft_val_parquet=w.sft.val_path, tokenizer=w.tokenizer)
    after = evaluate_assistant_perplexity(result.checkpoint, sft_val_parquet=w.sft.val_path, tokenizer=w.tokenizer)
    assert after < 0.9 * before
    assert result.val_loss == pytest.approx(torch.tensor(after).log().item(), rel=1e-4)


def test_sft_resume_is_exact(tmp_path):
    """Full fine-tuning interrupted at step 3 and resumed ends where an uninterrupted run ends, bit for bit:
    same batches (the stream's position), optimizer state, schedule and RNG."""
    torch.set_num_threads(1)
    base = pretrained_checkpoint()
    params = quiet_params(SftParams, max_steps=6, checkpoint_interval=3, grad_accum=2, sample_interval=2)
    straight = train(run_config("sft", tmp_path / "a", params, init_from=base))
    assert train(run_config("sft", tmp_path / "b", params, init_from=base), stop_at=3).step == 3
    resumed = train(run_config("sft", tmp_path / "b", params, init_from=base))
    assert resumed.resumed_from.endswith("step-000003") and resumed.step == 6
    a = load_file(f"{straight.checkpoint}/model.safetensors")
    b = load_file(f"{resumed.checkpoint}/model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert straight.tokens_seen == resumed.tokens_seen


def test_model_dropout_is_what_fine_tuning_trains_with_and_resumes_with(tmp_path):
    """sft.model_dropout replaces the base's dropout (0 in the tiny model) while fine-tuning: the run trains
    differently, its checkpoints record it, and a resume checks it like any other model setting."""
    torch.set_num_threads(1)
    base = pretrained_checkpoint()
    params = quiet_params(SftParams, max_steps=4, checkpoint_interval=2)
    plain = train(run_config("sft", tmp_path / "plain", params, init_from=base))
    dropped = quiet_params(SftParams, max_steps=4, checkpoint_interval=2, model_dropout=0.3)
    assert train(run_config("sft", tmp_path / "dropout", dropped, init_from=base), stop_at=2).step == 2
    resumed = train(run_config("sft", tmp_path / "dropout", dropped, init_from=base))
    assert resumed.resumed_from.endswith("step-000002") and resumed.step == 4
    assert load_config(base).dropout == 0.0 and load_config(plain.checkpoint).dropout == 0.0
    assert load_config(resumed.checkpoint).dropout == 0.3
    assert resumed.train_loss != pytest.approx(plain.train_loss, rel=1e-6)
    with pytest.raises(CheckpointMismatch, match="dropout"):  # the same run dir asked for another dropout
        train(run_config("sft", tmp_path / "dropout", quiet_params(SftParams, max_steps=6, checkpoint_interval=2,
                                                                   model_dropout=0.1), init_from=base))


def test_an_empty_sft_set_is_a_clear_error(tmp_path):
    empty = tmp_path / "empty.parquet"
    ParquetShardWriter(empty, SFT_SCHEMA).close()
    cfg = run_config("sft", tmp_path / "sft", quiet_params(SftParams), init_from=pretrained_checkpoint())
    cfg["data"]["train"] = str(empty)
    with pytest.raises(ValueError, match="the training SFT set is empty"):
        train(cfg)
    cfg["init_from"] = str(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="nowhere: no such checkpoint"):
        train(cfg)


def test_sft_checkpoint_for_another_model_config_is_refused(tmp_path):
    cfg = run_config("sft", tmp_path / "sft", quiet_params(SftParams, max_steps=2), init_from=pretrained_checkpoint())
    cfg["model"] = {**pretrained_config(), "n_layers": 3}
    with pytest.raises(ValueError, match=r"n_layers: checkpoint 2, requested 3"):
        train(cfg)


def pretrained_config() -> dict:
    import json

    return json.loads((pretrained_checkpoint() / "config.json").read_text())


def test_sft_with_another_tokenizer_than_the_base_is_refused(tmp_path):
    from tasks.tokenizer import TokenizerParams, train_tokenizer

    other = train_tokenizer(["a few words of some other text, typed again and again"] * 20, tmp_path / "tok",
                            TokenizerParams(vocab_size=300, heldout_fraction=0))
    cfg = run_config("sft", tmp_path / "sft", quiet_params(SftParams, max_steps=2), init_from=pretrained_checkpoint())
    cfg["tokenizer"] = other.path
    with pytest.raises(ValueError, match=r"is not the one .*step-000030 was trained with"):
        train(cfg)


def _first_step_gradients(tmp_path, name: str, batch_size: int, grad_accum: int, lora: bool = False):
    """Gradients of a run's first optimiser step, and the trained tokens of each of its micro-batches."""
    from model.hardware import Distributed
    from model.train import RunConfig, Trainer
    from storage.tokens import IGNORE_INDEX
    from tasks.training import LoraParams

    torch.manual_seed(0)
    cls, mode = (LoraParams, "lora") if lora else (SftParams, "sft")
    params = quiet_params(cls, batch_size=batch_size, grad_accum=grad_accum, **({"dropout": 0.0} if lora else {}))
    trainer = Trainer(RunConfig.from_dict(run_config(mode, tmp_path / name, params, pretrained_checkpoint())),
                      Distributed())
    trainer._setup(1)
    stream = trainer.data.stream
    counts = []
    for _ in range(grad_accum):  # the micro-batches this step draws, read without moving the stream
        indices = stream.next_indices()
        counts.append(int(sum((trainer.data.train.targets[i] != IGNORE_INDEX).sum() for i in indices)))
    stream.batches = 0
    trainer._micro_steps()
    return {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None}, counts


@pytest.mark.parametrize("lora", [False, True], ids=["sft", "lora"])
def test_gradient_accumulation_weighs_every_trained_token_the_same(tmp_path, lora):
    # one batch of 8 examples, or the same 8 as 4 micro-batches of 2 with unequal numbers of trained tokens:
    # a step's loss is the sum over all its trained tokens divided by their count, so the gradients agree
    whole, _ = _first_step_gradients(tmp_path, "whole", 8, 1, lora)
    split, counts = _first_step_gradients(tmp_path, "split", 2, 4, lora)
    assert max(counts) > 1.3 * min(counts), counts  # unequal micro-batches, or the test would prove nothing
    assert whole.keys() == split.keys() and whole
    for name in whole:
        torch.testing.assert_close(split[name], whole[name], atol=1e-6, rtol=1e-5, msg=name)


def test_early_stopping_hands_on_the_best_checkpoint_and_stays_stopped(tmp_path):
    import json

    from storage.checkpoints import BEST, list_checkpoints, resolve_checkpoint

    # a learning rate far too high for this tiny model: the held-out loss soon stops improving
    params = quiet_params(SftParams, max_steps=60, eval_interval=2, eval_batches=4, early_stop_patience=3,
                          keep_last=1, checkpoint_interval=50, learning_rate=3e-2, min_lr=3e-2, warmup_steps=0)
    run = run_config("sft", tmp_path / "run", params, pretrained_checkpoint())
    result = train(run)
    events = [json.loads(line) for line in open(result.metrics_path)]
    evals = [(e["step"], e["val_loss"]) for e in events if e["event"] == "eval"]
    stop = next(e for e in events if e["event"] == "early_stop")
    best_step, best_val = min(evals, key=lambda sv: sv[1])

    assert result.step == stop["step"] < 60  # stopped early...
    assert [s for s, _ in evals][-3:] == [stop["step"] - 4, stop["step"] - 2, stop["step"]]
    assert all(v >= best_val for _, v in evals[-3:])  # ...after three evaluations without a better loss
    assert stop["best_step"] == best_step
    best = resolve_checkpoint(tmp_path / "run")
    assert best.name == f"step-{best_step:06d}" == (tmp_path / "run" / BEST).read_text().strip()
    assert result.checkpoint == str(best)
    assert {p.name for _, p in list_checkpoints(tmp_path / "run")} == {best.name, f"step-{stop['step']:06d}"}

    again = train(run)  # a stopped run is finished: nothing more to train
    assert again.step == result.step and again.checkpoint == str(best)
