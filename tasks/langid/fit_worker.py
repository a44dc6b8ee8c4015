"""Train one fastText supervised model with one thread, in a process of its own (run by `train.py` as a script).

    python fit_worker.py '{"input": TRAIN_TXT, "output": MODEL_BIN, "params": {...train_supervised keywords}}'

Why a process of its own: fastText 0.9.2 (the wheel we install) does not zero the input matrix it allocates and
initialises only a tenth of it per training thread. With one thread, nine tenths start as whatever the
allocator hands back: zero pages when the matrix is freshly mapped from the kernel, old floats (NaN among them)
when it reuses memory the process freed before. A short-lived process whose allocator maps every large block
afresh (`MALLOC_MMAP_THRESHOLD_`, set by the parent) always gets zero pages, so the model depends only on the
data, the parameters and the seed. The parent starts it so that it dies with the thread that started it
(`tasks.training.dying_with_this_process`) and reads the saved model; an error is one line on stderr, exit 1.
"""

from __future__ import annotations

import json
import sys


def main(spec_json: str) -> int:
    spec = json.loads(spec_json)
    import fasttext

    try:
        model = fasttext.train_supervised(input=spec["input"], thread=1, verbose=0, **spec["params"])
        model.save_model(spec["output"])
    except (RuntimeError, ValueError) as e:
        print(str(e).splitlines()[0] if str(e) else type(e).__name__, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
