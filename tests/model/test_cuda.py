"""The training paths on a CUDA GPU: pretraining with bf16 autocast and torch.compile, resuming, full SFT, LoRA and
QLoRA (bitsandbytes NF4 with the paged optimizer) from a checkpoint, and chatting with the result in half
precision. Skipped where torch sees no CUDA device (CI); `bench/gpu_check.sh` runs them on a GPU machine."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from model import load_model
from model.chat import SamplingOptions, load_chat
from model.train import train
from tasks.training import LoraParams, PretrainParams, SftParams
from tests.support import pretrained_checkpoint, quiet_params, run_config

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def events(result, kind: str) -> list[dict]:
    return [r for r in map(json.loads, open(result.metrics_path)) if r["event"] == kind]


def test_pretraining_on_cuda_learns_and_resumes(tmp_path):
    params = quiet_params(PretrainParams, max_steps=60, batch_size=8, learning_rate=3e-3, min_lr=3e-4,
                          checkpoint_interval=30, log_interval=5, device="cuda", dtype="auto", compile="on")
    run_dir = tmp_path / "pretrain"
    first = train(run_config("pretrain", run_dir, params.model_copy(update={"max_steps": 30})))
    start = events(first, "start")[0]
    assert start["device"].startswith("cuda") and start["compile"] is True
    assert start["dtype"] == ("bfloat16" if torch.cuda.is_bf16_supported() else "float32")
    assert first.step == 30 and first.mfu is not None and 0 < first.mfu < 1

    resumed = train(run_config("pretrain", run_dir, params))
    assert events(resumed, "start")[-1]["resumed_from"] and resumed.step == 60
    losses = [r["loss"] for r in events(resumed, "train")]
    assert all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0] - 0.5, losses  # it learns the example chats

    # the checkpoint is plain float32 safetensors: it loads and runs on the CPU
    model = load_model(Path(resumed.checkpoint), device="cpu")
    assert next(model.parameters()).dtype == torch.float32
    with torch.no_grad():
        assert torch.isfinite(model(torch.tensor([[1, 2, 3]])).logits).all()


@pytest.mark.parametrize("mode, extra", [
    ("sft", {}),
    ("lora", {"rank": 8, "alpha": 16}),
    ("qlora", {"rank": 8, "alpha": 16, "quantize": "nf4", "paged_optimizer": True}),
])
def test_fine_tuning_on_cuda_then_chat(tmp_path, mode, extra):
    if mode == "qlora":
        pytest.importorskip("bitsandbytes")
    cls = SftParams if mode == "sft" else LoraParams
    params = quiet_params(cls, max_steps=40, learning_rate=3e-3, min_lr=3e-4, checkpoint_interval=40,
                          log_interval=5, device="cuda", dtype="auto", compile="off", **extra)
    result = train(run_config("sft" if mode == "sft" else "lora", tmp_path / mode, params,
                              init_from=pretrained_checkpoint()))
    start = events(result, "start")[0]
    assert start["device"].startswith("cuda")
    if mode == "qlora":
        assert 0 < start["quantized_weight_bytes"] < start["parameters"] * 4
    losses = [r["loss"] for r in events(result, "train")]
    assert all(math.isfinite(x) for x in losses) and losses[-1] < losses[0], losses

    checkpoint, adapter = (result.checkpoint, None) if mode == "sft" else (pretrained_checkpoint(), result.checkpoint)
    options = SamplingOptions(temperature=0, max_new_tokens=12)
    # in float32 the fine-tuned model computes on the GPU what it computes on the CPU
    on_gpu, _ = load_chat(checkpoint, adapter=adapter, device="cuda", dtype="float32", options=options)
    on_cpu, _ = load_chat(checkpoint, adapter=adapter, device="cpu", dtype="float32", options=options)
    ids = torch.tensor([on_cpu.tokenizer.encode("Are we still on for Saturday?").ids])
    with torch.no_grad():
        gpu_logits = on_gpu.model(ids.cuda()).logits.float().cpu()
        cpu_logits = on_cpu.model(ids).logits
    assert next(on_gpu.model.parameters()).device.type == "cuda"
    torch.testing.assert_close(gpu_logits, cpu_logits, rtol=2e-2, atol=2e-2)

    session, info = load_chat(checkpoint, adapter=adapter, device="cuda", options=options)  # half precision
    reply = session.reply("Are we still on for Saturday?")
    assert isinstance(reply, str) and session.turns[-1] == {"role": "Assistant", "text": reply}
