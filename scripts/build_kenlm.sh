#!/usr/bin/env bash
# Builds lmplz and build_binary from the kenlm sdist into .venv/bin (once; about a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x .venv/bin/lmplz ] && [ -x .venv/bin/build_binary ]; then exit 0; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
.venv/bin/python -m pip download -q --no-deps --no-binary kenlm "kenlm==$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("kenlm"))')" -d "$work"
tar -xzf "$work"/kenlm-*.tar.gz -C "$work"
src=$(find "$work" -maxdepth 1 -type d -name 'kenlm-*' | head -n1)
if ! { cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DKENLM_MAX_ORDER=6 \
        && cmake --build "$work/build" --target lmplz build_binary -j "$(nproc)"; } >"$work/build.log" 2>&1; then
    tail -n 30 "$work/build.log" >&2
    echo "setup: building lmplz failed; it needs: apt-get install cmake libboost-program-options-dev libboost-system-dev libboost-thread-dev libboost-test-dev zlib1g-dev libbz2-dev liblzma-dev" >&2
    exit 1
fi
cp "$work/build/bin/lmplz" "$work/build/bin/build_binary" .venv/bin/
echo "setup: built lmplz and build_binary into .venv/bin"
