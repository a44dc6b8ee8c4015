#!/usr/bin/env bash
# Installs the Debian documentation packages whose HTML bench/bench_pipeline.py wraps into its WARC corpus (and
# whose text its JSONL corpus is made from). Real pages nobody in this project wrote: Python's, Rust's, Java's,
# PostgreSQL's, Django's and Boost's manuals and the Debian Reference, about 900 MB of HTML in all.
# As root it runs apt-get; otherwise it prints the line to run. Packages already installed are left alone.
set -euo pipefail

CANDIDATES=(python3.11-doc debian-reference-en postgresql-doc-15 rust-doc python-django-doc libboost1.74-doc
            openjdk-17-doc)

missing=()
for pkg in "${CANDIDATES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null; then
    echo "bench_pipeline: no apt-get here; the WARC corpus needs Debian's documentation packages: ${missing[*]}" >&2
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "bench_pipeline: run as root: apt-get install --no-install-recommends ${missing[*]}" >&2
    exit 1
fi
apt-get update -q
available=()
for pkg in "${missing[@]}"; do  # names differ between Debian releases: take those this one has
    if apt-cache show "$pkg" >/dev/null 2>&1; then
        available+=("$pkg")
    else
        echo "bench_pipeline: $pkg is not in this release's archive; the corpus is built without it" >&2
    fi
done
if [ ${#available[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${available[@]}"
fi
