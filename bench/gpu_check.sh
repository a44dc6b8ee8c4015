#!/usr/bin/env bash
# The GPU checks in one go, for a machine with an NVIDIA GPU and a python3 that has torch with CUDA:
#   1. the CUDA tests (tests/model/test_cuda.py and the half-precision chat test): pretraining with bf16 autocast
#      and torch.compile, resume, full SFT / LoRA / QLoRA (bitsandbytes NF4, paged AdamW), chat on the GPU;
#   2. bench_train.py --gpu-only: gpt2-124m pretraining through model.train (tokens/s, MFU, peak memory);
#   3. bench_finetune.py: SFT vs LoRA vs QLoRA memory and tokens/s on the GPU;
#   4. bench_model.py --skip-cpu: the bare gpt2-124m training step, nanoGPT's bench.py setting.
# Each step has its own time limit and log ($OUT/<step>.log, default /tmp/gpu-check); the end of each log is
# printed. Packages missing from that python3 can be unpacked into .whl/site (put on PYTHONPATH here).
#
#   PYTHON=.venv/bin/python bash bench/gpu_check.sh [step ...]     # steps: tests train finetune model
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
[ -d .whl/site ] && export PYTHONPATH="$PWD/.whl/site${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
STEPS=${*:-tests train finetune model}

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))" \
    || exit 1

step_pid=
# SIGINT/SIGTERM stop the running step (timeout passes the signal on to its command's tree), then this script
trap '[ -n "$step_pid" ] && kill -TERM "$step_pid" 2>/dev/null; wait; exit 130' INT TERM

run_step() {  # name, seconds, command...
    local name=$1 limit=$2 t0 rc
    shift 2
    t0=$(date +%s)
    timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1 &
    step_pid=$!
    wait "$step_pid"
    rc=$?
    step_pid=
    echo "=== $name: exit $rc after $(($(date +%s) - t0)) s (limit $limit s)"
    grep -v '^{' "$OUT/$name.log" | tail -n "${TAIL_LINES:-22}"
}

for step in $STEPS; do
    case $step in
        tests) run_step tests "${TESTS_S:-200}" "$PY" -m pytest -q -p no:cacheprovider -x tests/model/test_cuda.py \
            "tests/model/test_chat.py::test_half_precision_on_cuda" ;;
        train) run_step train "${TRAIN_S:-150}" "$PY" bench/bench_train.py --gpu-only --quick ;;
        finetune) run_step finetune "${FINETUNE_S:-150}" "$PY" bench/bench_finetune.py --quick ;;
        model) run_step model "${MODEL_S:-110}" "$PY" bench/bench_model.py --skip-cpu --quick ;;
        *) echo "unknown step: $step (tests, train, finetune, model)"; exit 2 ;;
    esac
done
