#!/usr/bin/env bash
# Builds lmplz and build_binary from the kenlm sdist (the version of the installed `kenlm` module) into
# .venv/bin, once; about a minute. Missing compilers or libraries are named up front with the apt command.
set -euo pipefail
cd "$(dirname "$0")/.."
# KENLM_VERSION=newest: build from the newest sdist the package index offers, without the Python module installed
# (scripts/setup.sh runs it so while pip installs everything else); otherwise the installed module's version.
MODE=${KENLM_VERSION:-installed}
BUILT=.venv/bin/.kenlm-built-version
installed_version() {
    .venv/bin/python -c 'import importlib.metadata as m; print(m.version("kenlm"))' 2>/dev/null
}
if [ -x .venv/bin/lmplz ] && [ -x .venv/bin/build_binary ]; then
    # built before the version was recorded, or from the version installed now: nothing to do
    if [ ! -f "$BUILT" ] || [ "$MODE" = newest ] || [ "$(cat "$BUILT")" = "$(installed_version)" ]; then exit 0; fi
    echo "build_kenlm: lmplz was built from kenlm $(cat "$BUILT"), the installed module is $(installed_version): rebuilding"
fi
APT_HINT="apt-get install build-essential cmake libboost-program-options-dev libboost-system-dev libboost-thread-dev libboost-test-dev zlib1g-dev libbz2-dev liblzma-dev"

missing=()
command -v cmake >/dev/null || missing+=("cmake (package cmake)")
if ! command -v c++ >/dev/null; then
    missing+=("a C++ compiler (package build-essential)")
else
    # each header stands for a library lmplz links against
    for check in "boost/program_options.hpp:libboost-program-options-dev" "boost/thread.hpp:libboost-thread-dev" \
                 "zlib.h:zlib1g-dev" "bzlib.h:libbz2-dev" "lzma.h:liblzma-dev"; do
        header=${check%%:*}
        if ! printf '#include <%s>\n' "$header" | c++ -E -x c++ - >/dev/null 2>&1; then
            missing+=("$header (package ${check##*:})")
        fi
    done
fi
if [ ${#missing[@]} -gt 0 ]; then
    printf 'build_kenlm: cannot build lmplz/build_binary, missing: %s\n' "$(IFS=,; echo "${missing[*]}")" >&2
    echo "build_kenlm: install them with: sudo $APT_HINT" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    echo "build_kenlm: no .venv/bin/python; run 'make setup' first" >&2
    exit 1
fi
if [ "$MODE" = newest ]; then
    requirement=kenlm
else
    version=$(installed_version) || {
        echo "build_kenlm: the kenlm Python module is not installed in .venv (pip install kenlm)" >&2
        exit 1
    }
    requirement="kenlm==$version"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! .venv/bin/python -m pip download -q --no-deps --no-binary kenlm "$requirement" -d "$work" >"$work/download.log" 2>&1; then
    tail -n 5 "$work/download.log" >&2
    echo "build_kenlm: could not download the $requirement sdist from the package index" >&2
    exit 1
fi
sdist=$(find "$work" -maxdepth 1 -name 'kenlm-*.tar.gz' | head -n1)
version=$(basename "$sdist" .tar.gz)
version=${version#kenlm-}
tar -xzf "$sdist" -C "$work"
src=$(find "$work" -maxdepth 1 -type d -name 'kenlm-*' | head -n1)
if ! { cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DKENLM_MAX_ORDER=6 \
        && cmake --build "$work/build" --target lmplz build_binary -j "$(nproc)"; } >"$work/build.log" 2>&1; then
    tail -n 30 "$work/build.log" >&2
    echo "build_kenlm: building lmplz failed; it needs: sudo $APT_HINT" >&2
    exit 1
fi
cp "$work/build/bin/lmplz" "$work/build/bin/build_binary" .venv/bin/
echo "$version" > "$BUILT"
echo "build_kenlm: built lmplz and build_binary (kenlm $version) into .venv/bin"
