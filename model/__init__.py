"""The language model (DESIGN §5): configuration, the transformer, generation and safetensors checkpoints.

Imports torch (and storage); never Prefect, so training runs under torchrun on its own.
"""

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

__all__ = [
    "GPT", "InferenceCache", "ModelConfig", "ModelOutput", "count_parameters", "device_peak_flops",
    "flops_per_token", "generate", "load_model", "matmul_parameters", "mfu", "sample_next_token", "save_model",
]
