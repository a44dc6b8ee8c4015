#!/usr/bin/env bash
# Test-only set-up, run by `make test` after scripts/setup.sh (never by `make demo`): Debian's chromium, the
# headless browser tests/flows/test_chat_web.py drives the `chatlike chat --web` page with, and llama-cpp-python,
# with which the GGUF export's end-to-end tests (tests/model/test_gguf.py) run an exported file in llama.cpp.
# PyPI has only its sdist, which compiles llama.cpp; building just the shared library (no tools, examples,
# tests, server or multimodal library) took 7 minutes on a busy 2-core machine (460 s of CPU), once: pip keeps
# the built wheel in its cache, and later runs take seconds.
# Needs cmake and a C++ compiler, which scripts/setup.sh already installs (for KenLM).
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium from apt when we are root (about 130 packages, 27 s here including `apt-get update`); the test talks to
# it over the DevTools Protocol, so nothing is downloaded at run time. Without it the test skips, except under CI.
if ! command -v chromium >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup_test: installing chromium"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "setup_test: chromium is missing (the browser test will skip): sudo apt-get install chromium" >&2
    fi
fi

export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
echo "setup_test: installing the test extras (llama-cpp-python compiles llama.cpp the first time: minutes)"
.venv/bin/python -m pip install -q -e ".[gguf-test]"
echo "setup_test: done"
