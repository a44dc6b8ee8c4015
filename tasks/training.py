"""Parameters of the training stages (pretrain, sft-data, sft, lora), the `run.json` a training run reads, and
the launcher that starts `python -m model.train` (or `torchrun` for several GPUs) and streams its output.

The training code itself lives in `model/` and never imports this module: a run is described by `run.json`
(written with `make_run_config` + `write_run_config`), whose `params` are one of the models below dumped to JSON.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from storage.atomic import write_json_atomic
from storage.schemas import MESSAGE_KINDS
from tasks.base import StrictModel

PROJECT_ROOT = Path(__file__).resolve().parent.parent
RUN_MODES = ("pretrain", "sft", "lora")
STAGE_VERSION = "1"  # of the pretrain, sft and lora runs: bump when model/ trains differently from the same data
# The projection layers of model/transformer.py that LoRA adapts: those of softmax and linear attention, MLA's
# (q_proj or q_a_proj/q_b_proj, kv_a_proj, kv_b_proj), the MLPs and experts; names a model lacks are skipped.
# Never lm_head, which is the token embedding itself when embeddings are tied.
LORA_TARGET_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "q_a_proj", "q_b_proj", "kv_a_proj", "kv_b_proj",
                       "gate_proj", "up_proj", "down_proj"]
TAIL_LINES = 40  # output lines quoted in the error of a failed run
TERMINATE_GRACE_S = 10.0
ERROR_PREFIX = "error: "  # how model.train's main writes an error the user can act on (one line)

Device = Literal["auto", "cpu", "cuda"]
DType = Literal["auto", "float32", "bfloat16"]
Compile = Literal["auto", "on", "off"]


class TrainingParams(StrictModel):
    """What every training run shares: steps, batches, optimiser, schedule, evaluation, checkpoints, hardware."""

    max_steps: int = Field(200, ge=1, description="Optimiser steps in all (the cosine schedule ends here).")
    batch_size: int = Field(8, ge=1, description="Sequences per micro-batch per process.")
    grad_accum: int = Field(1, ge=1, description="Micro-batches per optimiser step.")
    learning_rate: float = Field(1e-3, gt=0, description="Peak learning rate, reached after warmup.")
    min_lr: float = Field(1e-4, ge=0, description="Learning rate at the end of the cosine decay.")
    warmup_steps: int = Field(20, ge=0)
    weight_decay: float = Field(0.1, ge=0, description="AdamW decay on matrices and embeddings only.")
    beta1: float = Field(0.9, gt=0, lt=1)
    beta2: float = Field(0.95, gt=0, lt=1)
    grad_clip: float = Field(1.0, ge=0, description="Clip the global gradient norm to this (0: off).")
    log_interval: int = Field(10, ge=1, description="Steps between two metrics lines.")
    eval_interval: int = Field(50, ge=0, description="Steps between validation losses (0: only at the end).")
    eval_batches: int = Field(20, ge=1, description="Validation batches per evaluation (the first ones).")
    checkpoint_interval: int = Field(100, ge=1, description="Steps between checkpoints (the last step always).")
    keep_last: int = Field(3, ge=1, description="Checkpoints kept; older ones are deleted.")
    sample_interval: int = Field(100, ge=0, description="Steps between sample generations in the log (0: off).")
    sample_prompt: str = Field("", description="Text to continue (pretrain) or User message (sft, lora).")
    sample_tokens: int = Field(48, ge=1)
    early_stop_patience: int = Field(
        0, ge=0, description="Stop once the validation loss has not improved for this many evaluations, and hand on "
                             "the best checkpoint (0: off, train max_steps and hand on the last).")
    seed: int = 1337
    device: Device = "auto"
    dtype: DType = Field("auto", description="auto: bfloat16 autocast on a GPU that has it, float32 on CPU.")
    compile: Compile = Field("auto", description="torch.compile; auto: on a GPU, never on CPU.")
    nproc: int = Field(1, ge=1, description="Processes (GPUs) for torchrun; 1 runs a plain process.")

    def run_params(self) -> dict:
        """The `params` of run.json: every setting the trainer reads (the base model is run.json's init_from)."""
        return self.model_dump(mode="json", exclude={"base"})

    @model_validator(mode="after")
    def _min_lr_below_peak(self) -> TrainingParams:
        if self.min_lr > self.learning_rate:
            raise ValueError(f"min_lr={self.min_lr} is above learning_rate={self.learning_rate}")
        return self


class PretrainParams(TrainingParams):
    preset: str = Field("tiny", description="Model preset (model/config.py PRESETS).")
    model: dict[str, Any] = Field(default_factory=dict, description="ModelConfig fields overriding the preset.")
    block_size: int = Field(
        128, ge=8, description="Context length of the model and of the training windows (unless model overrides it)."
    )


class SftParams(TrainingParams):
    """Full fine-tuning from a checkpoint on the sft-data examples; the model comes from that checkpoint."""

    max_steps: int = Field(100, ge=1)
    learning_rate: float = Field(3e-4, gt=0)
    min_lr: float = Field(3e-5, ge=0)
    warmup_steps: int = Field(10, ge=0)
    weight_decay: float = Field(0.0, ge=0)
    eval_interval: int = Field(25, ge=0)
    checkpoint_interval: int = Field(50, ge=1)
    sample_interval: int = Field(50, ge=0)
    sample_prompt: str = "Hey! Are you free on Saturday?"
    base: str = Field("pretrain", description="What to fine-tune: 'pretrain' (this pipeline's own checkpoint) or "
                                              "the folder of an imported model (chatlike model import).")
    block_size: int | None = Field(None, ge=8, description="Longest example in tokens; None: the model's block size.")
    train_on: Literal["assistant", "all"] = Field(
        "assistant", description="Loss on the Assistant turns only (their text and end token), or on every token."
    )
    model_dropout: float | None = Field(
        None, ge=0, lt=1, description="Dropout in the model (attention, residual, MLP, embeddings) while it is "
                                      "fine-tuned; None: the base's own (its config.json). Choose it by the held-out "
                                      "Assistant loss (bench/bench_likeness.py --sft-dropout).")


class LoraParams(SftParams):
    """LoRA (peft) on the projection layers of a checkpoint; only the adapter trains and is saved."""

    base: str | None = Field(None, description="As sft.base; None: the same base as sft.")  # type: ignore[assignment]

    learning_rate: float = Field(1e-3, gt=0)
    min_lr: float = Field(1e-4, ge=0)
    rank: int = Field(8, ge=1)
    alpha: float = Field(16.0, gt=0, description="Scale of the update: alpha / rank.")
    dropout: float = Field(0.05, ge=0, lt=1, description="Dropout on the LoRA input.")
    target_modules: list[str] = Field(default_factory=lambda: list(LORA_TARGET_MODULES))
    quantize: Literal["none", "nf4"] = Field(
        "none", description="nf4: QLoRA, the frozen base held in 4-bit NormalFloat with double quantization.")
    paged_optimizer: bool = Field(False, description="Page the optimizer state to CPU memory under pressure (CUDA).")

    @field_validator("target_modules")
    @classmethod
    def _some_modules(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("target_modules is empty: name the projection layers to adapt (e.g. q_proj, v_proj)")
        return v


class SftDataParams(StrictModel):
    target_author: str | list[str] | None = Field(
        None, description="The person to imitate, as in the chats (case, surrounding spaces, invisible marks "
        "ignored; a phone number compared by its digits); a list when they appear under several names "
        "(\"Sam\", \"Sam 🇫🇷\")."
    )
    session_gap_hours: float = Field(6.0, gt=0, description="A longer silence starts a new conversation.")
    block_size: int = Field(128, ge=8, description="Longest example in tokens (at most the model's block size).")
    val_fraction: float = Field(0.1, ge=0, lt=1, description="Share of sessions (by hash) held out for validation.")
    split_salt: str = "sft-val"

    def target_names(self) -> list[str]:
        """The names the person to imitate goes by (empty when none is set)."""
        names = [self.target_author] if isinstance(self.target_author, str) else self.target_author or []
        return [n for n in names if n.strip()]
    drop_kinds: list[str] = Field(
        default_factory=lambda: ["media", "deleted", "system", "poll"], description="Message kinds left out."
    )
    max_context_turns: int | None = Field(None, ge=1, description="Turns of context before the reply (None: as fit).")
    clean: bool = Field(True, description="Clean every message with the clean stage's rules (links, e-mails, "
                                          "phone numbers, mentions…), as the pretraining text is.")

    @field_validator("drop_kinds")
    @classmethod
    def _known_kinds(cls, v: list[str]) -> list[str]:
        unknown = sorted(set(v) - set(MESSAGE_KINDS))
        if unknown:
            raise ValueError(f"unknown message kind(s) {unknown}; kinds are {', '.join(MESSAGE_KINDS)}")
        return v


# ------------------------------------------------------------------------------------------------------------
# run.json


def make_run_config(
    mode: str,
    params: TrainingParams,
    run_dir: str | os.PathLike,
    tokenizer_path: str | os.PathLike,
    train_data: str | os.PathLike | Sequence[str | os.PathLike],
    val_data: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    init_from: str | os.PathLike | None = None,
    tokens_manifest: Mapping[str, Any] | None = None,
    resume: bool = True,
) -> dict:
    """The `run.json` document for `python -m model.train --config run.json`.

    pretrain: train_data / val_data are token-shard folders (the encode dataset's `train/` and `val/`, or the
    dataset folder itself for train); tokens_manifest is that dataset's manifest `stats` (vocab_size,
    tokenizer_sha256), checked against the tokenizer before training. When it is None and train_data is an
    encode dataset, its manifest.json is read. sft / lora: train_data / val_data are sft-data Parquet files and
    init_from the checkpoint (or run folder) to start from.
    """
    if mode not in RUN_MODES:
        raise ValueError(f"unknown training mode {mode!r}; one of {', '.join(RUN_MODES)}")
    expected = {"pretrain": PretrainParams, "sft": SftParams, "lora": LoraParams}[mode]
    if type(params) is not expected:
        raise ValueError(f"{mode} runs take {expected.__name__}, not {type(params).__name__}")
    if mode != "pretrain" and init_from is None:
        raise ValueError(f"a {mode} run needs init_from: the checkpoint to fine-tune")
    if mode == "pretrain" and tokens_manifest is None:
        tokens_manifest = _manifest_stats(train_data)

    def paths(value):
        if value is None:
            return None
        if isinstance(value, (str, os.PathLike)):
            return str(Path(value).resolve())
        return [str(Path(v).resolve()) for v in value]

    data = {"train": paths(train_data), "val": paths(val_data)}
    if tokens_manifest:
        data["vocab_size"] = tokens_manifest.get("vocab_size")
        data["tokenizer_sha256"] = tokens_manifest.get("tokenizer_sha256")
    return {
        "mode": mode,
        "run_dir": str(Path(run_dir).resolve()),
        "tokenizer": str(Path(tokenizer_path).resolve()),
        "data": data,
        "init_from": str(Path(init_from).resolve()) if init_from is not None else None,
        "params": params.run_params(),
        "resume": resume,
    }


def _manifest_stats(train_data: object) -> dict | None:
    if not isinstance(train_data, (str, os.PathLike)):
        return None
    for folder in (Path(train_data), Path(train_data).parent):
        manifest = folder / "manifest.json"
        if manifest.is_file():
            return json.loads(manifest.read_text(encoding="utf-8")).get("stats") or None
    return None


def write_run_config(run_cfg: Mapping[str, Any], path: str | os.PathLike | None = None) -> Path:
    """Write run.json (default `<run_dir>/run.json`) atomically; returns its path."""
    path = Path(path) if path is not None else Path(run_cfg["run_dir"]) / "run.json"
    return write_json_atomic(path, dict(run_cfg), indent=2, sort_keys=True)


# ------------------------------------------------------------------------------------------------------------
# the launcher


def training_command(argv: Sequence[str], nproc: int) -> list[str]:
    """`python -m model.train ARGV`, or torchrun's module (`torch.distributed.run`, what the `torchrun` script
    runs) with one process per GPU when nproc > 1."""
    if nproc < 1:
        raise ValueError(f"nproc={nproc} must be >= 1")
    if nproc == 1:
        return [sys.executable, "-m", "model.train", *argv]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
            "-m", "model.train", *argv]


def launch_training(argv: list[str], nproc: int, log: Callable[[str], None], env: Mapping[str, str] | None = None,
                    cwd: str | os.PathLike | None = None, *, check: bool = True,
                    grace_s: float = TERMINATE_GRACE_S) -> int:
    """Run a training process (see `training_command`), passing each output line to `log` as it arrives.

    The child runs in its own process group. If this thread is interrupted (KeyboardInterrupt, SystemExit, a
    cancellation: Prefect turns the SIGTERM a cancelled flow run receives into an exception) or anything fails here
    (including `log`), the whole group and every descendant (torchrun's workers have sessions of their own) get
    SIGTERM, then SIGKILL after `grace_s`, and the exception propagates. Returns the exit code; with check=True (the default) a non-zero
    exit raises RuntimeError quoting the last lines of output.
    """
    return run_streaming(training_command(argv, nproc), log, env=env, cwd=cwd, check=check, grace_s=grace_s)


# Runs first in the child: asks Linux to send it SIGTERM when the thread that started it dies (also when that
# process is SIGKILLed, so no cleanup of ours can run), then becomes the real command (exec keeps the request).
# torchrun stops its workers on SIGTERM. If the parent is gone already, the command is not started at all.
_DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(143)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def dying_with_this_process(cmd: Sequence[str]) -> list[str]:
    """`cmd` started through `_DIE_WITH_PARENT` on Linux: it gets SIGTERM when the calling thread dies."""
    if not sys.platform.startswith("linux"):
        return list(cmd)
    return [sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()), *cmd]


def run_streaming(cmd: Sequence[str], log: Callable[[str], None], env: Mapping[str, str] | None = None,
                  cwd: str | os.PathLike | None = None, *, check: bool = True,
                  grace_s: float = TERMINATE_GRACE_S) -> int:
    """`launch_training` for any command: stream lines, own process group, kill the group on the way out; on
    Linux the child also gets SIGTERM if this process dies without a chance to clean up (SIGKILL, OOM killer)."""
    child_env = {**os.environ, **(env or {})}
    child_env["PYTHONUNBUFFERED"] = "1"
    # `-m model.train` must resolve even when the caller's working directory is elsewhere
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), child_env.get("PYTHONPATH")) if p)
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    proc = subprocess.Popen(
        dying_with_this_process(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
        encoding="utf-8", errors="replace", bufsize=1, env=child_env, cwd=cwd, start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            tail.append(line)
            log(line)
        code = proc.wait()
    except BaseException:
        terminate_process_group(proc, grace_s)
        raise
    finally:
        if proc.stdout is not None:
            proc.stdout.close()
    if code != 0 and check:
        # model.train reports what the user can act on as one `error: …` line: that line is the whole error
        errors = [line for line in tail if line.startswith(ERROR_PREFIX)]
        if errors:
            raise RuntimeError(f"training command exited with code {code}: {errors[-1][len(ERROR_PREFIX):]}")
        shown = "\n".join(tail) or "(no output)"
        raise RuntimeError(f"training command exited with code {code}: {' '.join(cmd)}\nlast output:\n{shown}")
    return code


def terminate_process_group(proc: subprocess.Popen, grace_s: float = TERMINATE_GRACE_S) -> None:
    """SIGTERM to the child's process group and to every descendant, SIGKILL to what is left after grace_s;
    reaps the child.

    Descendants are tracked one by one as well because torchrun starts each worker in a session of its own: they
    are outside the group, and a torchrun killed before it could stop them would leave them running on the GPUs.
    """
    terminate_process_groups([proc], grace_s)


def terminate_process_groups(procs: Sequence[subprocess.Popen], grace_s: float = TERMINATE_GRACE_S) -> None:
    """`terminate_process_group` for several children at once: one grace period for all of them."""
    pgids: set[int] = set()
    family: set[int] = set()
    for proc in procs:
        try:
            pgids.add(os.getpgid(proc.pid))
        except ProcessLookupError:
            pass
        family |= set(descendant_pids(proc.pid))
    for pgid in pgids:
        _signal_group(pgid, signal.SIGTERM)
    _signal_each(family, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        for proc in procs:
            family |= set(descendant_pids(proc.pid))  # what is started meanwhile; orphans stay in the set
            proc.poll()  # reaps it: a zombie would keep its group alive
        if not (any(map(_group_alive, pgids)) or any(map(_pid_alive, family))):
            break
        time.sleep(0.05)
    for pgid in pgids:
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
    _signal_each({pid for pid in family if _pid_alive(pid)}, signal.SIGKILL)
    for proc in procs:
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
            pass


def descendant_pids(pid: int) -> list[int]:
    """Children, grandchildren, … of pid, from /proc (Linux); [] where there is no /proc."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()  # after "(command name)", which may hold spaces
        except OSError:  # gone meanwhile
            continue
        children[int(fields[1])].append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _pid_alive(pid: int) -> bool:
    """Running (a zombie has finished: only its parent's wait is missing)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        try:
            os.kill(pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return not os.path.isdir("/proc")  # /proc exists but has no entry: gone


def _signal_each(pids: set[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
