"""The language model (DESIGN §5): configuration, the transformer, generation and safetensors checkpoints.

Imports torch (and storage); never Prefect, so training runs under torchrun on its own.
"""

import logging

from model.checkpoint import load_model, save_model
from model.config import (
    ModelConfig,
    count_parameters,
    device_peak_flops,
    flops_per_token,
    matmul_parameters,
    mfu,
)
from model.generate import generate, sample_next_token
from model.transformer import GPT, InferenceCache, ModelOutput

# peft imports bitsandbytes (QLoRA, model/qlora.py), which on a CPU with AVX512-BF16 logs at import that it could not
# fetch an optional inference kernel from the Hugging Face Hub: a path model/qlora.py turns off; nothing downloads.
logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)

__all__ = [
    "GPT", "InferenceCache", "ModelConfig", "ModelOutput", "count_parameters", "device_peak_flops",
    "flops_per_token", "generate", "load_model", "matmul_parameters", "mfu", "sample_next_token", "save_model",
]
