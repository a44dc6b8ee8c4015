#!/usr/bin/env bash
# Test-only set-up, run by `make test` after scripts/setup.sh (never by `make demo`): llama-cpp-python, with
# which the GGUF export's end-to-end tests (tests/model/test_gguf.py) run an exported file in llama.cpp.
# PyPI has only its sdist, which compiles llama.cpp; building just the shared library (no tools, examples,
# tests, server or multimodal library) took 7 minutes on a busy 2-core machine (460 s of CPU), once: pip keeps
# the built wheel in its cache, and later runs take seconds.
# Needs cmake and a C++ compiler, which scripts/setup.sh already installs (for KenLM).
set -euo pipefail
cd "$(dirname "$0")/.."

export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
echo "setup_test: installing the test extras (llama-cpp-python compiles llama.cpp the first time: minutes)"
.venv/bin/python -m pip install -q -e ".[gguf-test]"
echo "setup_test: done"
