"""Pretraining runs on CPU: resuming is exact, checkpoints are complete or absent, bad inputs are named."""

from __future__ import annotations

import json
import os

import pytest
import torch
from safetensors.torch import load_file

from model.train import learning_rate, train
from storage.checkpoints import LATEST, CheckpointMismatch, latest_checkpoint, list_checkpoints
from tasks.training import PretrainParams, SftParams, launch_training, write_run_config
from tests.support import TINY_MODEL, quiet_params, run_config, tiny_world

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _params(**overrides):
    # dropout and gradient accumulation: a resume must also restore the RNG and count micro-batches right
    model = {**TINY_MODEL, "dropout": 0.1}
    return quiet_params(PretrainParams, model=model, grad_accum=2, eval_interval=4, **overrides)


def _weights(checkpoint):
    return load_file(os.path.join(checkpoint, "model.safetensors"))


def test_resumed_run_ends_with_bitwise_identical_weights(tmp_path):
    # samples in the log (at 3, 6, and when stopping at 4) draw from their own generator: the training RNG that
    # dropout uses must not notice them
    straight = train(run_config("pretrain", tmp_path / "straight", _params(sample_interval=3)))
    first = train(run_config("pretrain", tmp_path / "resumed", _params(sample_interval=3)), stop_at=4)
    assert first.step == 4 and first.checkpoint.endswith("step-000004")
    second = train(run_config("pretrain", tmp_path / "resumed", _params(sample_interval=3)))
    assert second.resumed_from.endswith("step-000004") and second.step == 8

    a, b = _weights(straight.checkpoint), _weights(second.checkpoint)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    opt_a = torch.load(os.path.join(straight.checkpoint, "optimizer.pt"), weights_only=True)
    opt_b = torch.load(os.path.join(second.checkpoint, "optimizer.pt"), weights_only=True)
    assert all(torch.equal(opt_a[k], opt_b[k]) for k in opt_a)
    assert straight.tokens_seen == second.tokens_seen == 8 * 2 * 4 * 128
    # the resumed run's log is one curve: the same losses at the same steps
    losses = [
        [(r["step"], r["loss"]) for r in map(json.loads, open(res.metrics_path)) if r["event"] == "train"]
        for res in (straight, second)
    ]
    assert losses[0] == losses[1]
    samples = [r for r in map(json.loads, open(straight.metrics_path)) if r["event"] == "sample"]
    assert [r["step"] for r in samples] == [3, 6, 8] and all(isinstance(r["text"], str) for r in samples)


def test_checkpoint_layout_state_and_pruning(tmp_path):
    run_dir = tmp_path / "run"
    result = train(run_config("pretrain", run_dir, _params(checkpoint_interval=2, keep_last=2)))
    assert [s for s, _ in list_checkpoints(run_dir)] == [6, 8]  # keep_last=2 of 2, 4, 6, 8
    assert (run_dir / LATEST).read_text().strip() == "step-000008"
    ckpt = run_dir / "step-000008"
    assert {p.name for p in ckpt.iterdir()} == {"model.safetensors", "config.json", "optimizer.pt", "state.json"}

    optimizer = torch.load(ckpt / "optimizer.pt", weights_only=True)
    assert optimizer and all(isinstance(v, torch.Tensor) for v in optimizer.values())
    assert any(k.endswith("/exp_avg_sq") for k in optimizer)
    state = json.loads((ckpt / "state.json").read_text())
    assert state["step"] == 8 and state["tokens_seen"] == result.tokens_seen
    assert state["config"]["d_model"] == 32 and state["data"]["batches"] == 16  # 8 steps × 2 micro-batches
    rng = state["rng"][0]
    assert isinstance(rng["torch"], list) and isinstance(rng["numpy"][1], list) and isinstance(rng["python"][1], list)
    assert state["tokenizer"]["sha256"] == tiny_world().tokens_stats["tokenizer_sha256"]

    records = [json.loads(line) for line in open(run_dir / "metrics.jsonl")]
    train_lines = [r for r in records if r["event"] == "train"]
    assert [r["step"] for r in train_lines] == [2, 4, 6, 8]
    assert all(r["mfu"] is None and r["tokens_per_s"] > 0 and r["lr"] > 0 for r in train_lines)
    assert [r["step"] for r in records if r["event"] == "eval"] == [4, 8]
    assert (run_dir / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_mixture_of_experts_logs_expert_usage(tmp_path):
    model = {**TINY_MODEL, "n_experts": 4, "n_experts_per_token": 2, "n_shared_experts": 1}
    result = train(run_config("pretrain", tmp_path / "moe", quiet_params(PretrainParams, max_steps=4, model=model)))
    lines = [r for r in map(json.loads, open(result.metrics_path)) if r["event"] == "train"]
    assert [r["step"] for r in lines] == [2, 4]
    for r in lines:
        assert len(r["expert_usage"]) == TINY_MODEL["n_layers"]
        assert all(len(layer) == 4 and sum(layer) == pytest.approx(1.0, abs=1e-3) for layer in r["expert_usage"])

    # fine-tuning the MoE model on right-padded chat batches (padding is left out of the routing statistics)
    sft = train(run_config("sft", tmp_path / "moe-sft", quiet_params(SftParams, max_steps=2),
                           init_from=result.checkpoint))
    lines = [r for r in map(json.loads, open(sft.metrics_path)) if r["event"] == "train"]
    assert lines and all(sum(layer) == pytest.approx(1.0, abs=1e-3) for layer in lines[-1]["expert_usage"])


def test_an_interrupted_save_leaves_no_checkpoint_and_is_cleaned_up(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    train(run_config("pretrain", run_dir, _params()), stop_at=4)

    real_save = torch.save

    def killed_while_saving(obj, path, *args, **kwargs):
        real_save(obj, path, *args, **kwargs)
        raise KeyboardInterrupt  # as if the process died with the checkpoint half written

    monkeypatch.setattr("model.checkpoint.torch.save", killed_while_saving)
    with pytest.raises(KeyboardInterrupt):
        train(run_config("pretrain", run_dir, _params()))
    monkeypatch.undo()

    leftovers = [p.name for p in run_dir.iterdir() if p.name.startswith(".tmp-")]
    assert leftovers == [f".tmp-step-000008-{os.getpid()}"]
    assert latest_checkpoint(run_dir).name == "step-000004"
    assert (run_dir / LATEST).read_text().strip() == "step-000004"

    result = train(run_config("pretrain", run_dir, _params()))
    assert result.resumed_from.endswith("step-000004") and result.step == 8
    assert not [p for p in run_dir.iterdir() if p.name.startswith(".tmp-")]


def test_learning_rate_warms_up_then_decays_to_min_lr():
    s = _params(max_steps=100, warmup_steps=10, learning_rate=1e-3, min_lr=1e-4)
    from model.train import TrainSettings

    settings = TrainSettings.from_dict(s.model_dump(mode="json"))
    lrs = [learning_rate(i, settings) for i in range(100)]
    assert lrs[0] == pytest.approx(1e-4) and lrs[9] == pytest.approx(1e-3)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:], strict=False))
    assert lrs[-1] == pytest.approx(1e-4, rel=0.01)


def test_resume_with_another_model_config_names_both(tmp_path):
    run_dir = tmp_path / "run"
    train(run_config("pretrain", run_dir, quiet_params(PretrainParams, max_steps=2)), stop_at=2)
    bigger = quiet_params(PretrainParams, max_steps=4, model={**TINY_MODEL, "d_model": 64})
    with pytest.raises(CheckpointMismatch, match=r"d_model: checkpoint 32, requested 64") as err:
        train(run_config("pretrain", run_dir, bigger))
    assert "step-000002" in str(err.value)


def test_resume_with_another_tokenizer_is_refused(tmp_path):
    from tasks.tokenizer import TokenizerParams, train_tokenizer

    run_dir = tmp_path / "run"
    train(run_config("pretrain", run_dir, quiet_params(PretrainParams, max_steps=2)), stop_at=2)
    other = train_tokenizer(["some other text to learn a few merges from, again and again"] * 20, tmp_path / "tok",
                            TokenizerParams(vocab_size=300, heldout_fraction=0))
    cfg = run_config("pretrain", run_dir, quiet_params(PretrainParams, max_steps=4))
    cfg["tokenizer"], cfg["data"]["tokenizer_sha256"], cfg["data"]["vocab_size"] = other.path, None, None
    with pytest.raises(CheckpointMismatch, match=r"step-000002 was trained with another tokenizer"):
        train(cfg)


def test_a_tokenizer_that_did_not_encode_the_shards_is_refused(tmp_path):
    cfg = run_config("pretrain", tmp_path / "run", quiet_params(PretrainParams, max_steps=2))
    cfg["data"]["tokenizer_sha256"] = "0" * 64
    with pytest.raises(ValueError, match="is not the one the token shards were encoded with"):
        train(cfg)
    cfg = run_config("pretrain", tmp_path / "run", quiet_params(PretrainParams, max_steps=2))
    cfg["data"]["vocab_size"] = 512
    with pytest.raises(ValueError, match="has 400 ids but the token shards were encoded with a 512-id tokenizer"):
        train(cfg)


def test_launcher_runs_the_module_and_streams_its_json_lines(tmp_path):
    cfg = run_config("pretrain", tmp_path / "run", quiet_params(PretrainParams, max_steps=2, log_interval=1))
    path = write_run_config(cfg)
    lines: list[str] = []
    code = launch_training(["--config", str(path)], 1, lines.append, env={"OMP_NUM_THREADS": "1"})
    assert code == 0
    events = [json.loads(line)["event"] for line in lines if line.startswith("{")]
    assert events[0] == "start" and events.count("train") == 2 and events[-1] == "done"
    assert (tmp_path / "run" / "step-000002" / "model.safetensors").is_file()

    path.write_text(json.dumps({**cfg, "mode": "pretrain", "run_dir": str(tmp_path / "other"),
                                "data": {**cfg["data"], "vocab_size": 999}}))
    with pytest.raises(RuntimeError, match=r"exited with code 2(.|\n)*999-id tokenizer"):
        launch_training(["--config", str(path)], 1, lambda line: None)


@pytest.mark.slow
def test_ddp_under_torchrun_resumes_exactly(tmp_path):
    """Two CPU processes (gloo): each rank draws its own windows and restores its own RNG on resume."""
    params = quiet_params(PretrainParams, max_steps=4, nproc=2, model={**TINY_MODEL, "dropout": 0.1})
    env = {"OMP_NUM_THREADS": "1"}
    straight = write_run_config(run_config("pretrain", tmp_path / "a", params))
    resumed = write_run_config(run_config("pretrain", tmp_path / "b", params))
    lines: list[str] = []
    assert launch_training(["--config", str(straight)], 2, lines.append, env=env) == 0
    launch_training(["--config", str(resumed), "--stop-at", "2"], 2, lambda line: None, env=env)
    launch_training(["--config", str(resumed)], 2, lambda line: None, env=env)

    start = next(json.loads(line) for line in lines if line.startswith('{"event": "start"'))
    assert start["world_size"] == 2 and start["batch_tokens"] == 2 * 4 * 128
    state = json.loads((tmp_path / "b" / "step-000004" / "state.json").read_text())
    assert len(state["rng"]) == 2 and state["rng"][0] != state["rng"][1] and state["world_size"] == 2
    a, b = _weights(tmp_path / "a" / "step-000004"), _weights(tmp_path / "b" / "step-000004")
    assert all(torch.equal(a[k], b[k]) for k in a)
