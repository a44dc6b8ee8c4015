# Two commands on a fresh machine: `make demo` and `make test` (both set up .venv first).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.chatlike-installed
CONFIG ?= configs/demo.yaml
PYTEST_ARGS ?=

.PHONY: setup demo test test-fast serve bench lint clean-data

$(STAMP): pyproject.toml scripts/setup.sh scripts/build_kenlm.sh
	bash scripts/setup.sh
	@touch $(STAMP)

# The suffix-array dedup's compiled helper (tasks/dedup/repeats.c; without it the LCP array is built instead)
REPEATS_LIB := $(VENV)/lib/libchatlike_repeats.so

$(REPEATS_LIB): tasks/dedup/repeats.c $(STAMP)
	cc -O2 -shared -fPIC -o $@ $<

setup: $(STAMP) $(REPEATS_LIB)

demo: $(STAMP) $(REPEATS_LIB)
	$(VENV)/bin/chatlike run --config $(CONFIG)
	@echo "--- a sample reply from the fine-tuned model (User: Hey Sam, are you free on Saturday?)"
	@$(VENV)/bin/chatlike chat --checkpoint "$$($(VENV)/bin/chatlike status --config $(CONFIG) --path sft)" \
		--once "Hey Sam, are you free on Saturday?" --seed 1 --temperature 0.7
	@echo "--- how much base, SFT and LoRA chat like Sam on held-out chats (the persona-eval stage)"
	@$(VENV)/bin/chatlike eval --config $(CONFIG)

test: $(STAMP) $(REPEATS_LIB)
	$(PY) -m pytest -q $(PYTEST_ARGS)

# Test-only extras (not for `make demo`): llama-cpp-python, built from source once, runs exported GGUF files.
TEST_STAMP := $(VENV)/.chatlike-test-installed

$(TEST_STAMP): $(STAMP) pyproject.toml scripts/setup_test.sh
	bash scripts/setup_test.sh
	@touch $(TEST_STAMP)

test: $(TEST_STAMP)

# Unit and flow tests only; CI runs everything, including the slow end-to-end tests.
test-fast: $(STAMP) $(REPEATS_LIB)
	$(PY) -m pytest -q -m "not slow" $(PYTEST_ARGS)

serve: $(STAMP) $(REPEATS_LIB)
	$(VENV)/bin/chatlike serve

BENCH_STAMP := $(VENV)/.chatlike-bench-installed

$(BENCH_STAMP): $(STAMP) pyproject.toml bench/setup_pipeline_corpus.sh
	$(PY) -m pip install -q -e ".[dev,dask,bench]"
	# datatrove's WarcReader imports these (bench_pipeline.py); its own extras name them, not `datatrove`
	$(PY) -m pip install -q faust-cchardet python-magic
	# Debian documentation packages whose HTML is bench_pipeline.py's WARC corpus (apt-get as root)
	bash bench/setup_pipeline_corpus.sh || echo "bench_pipeline.py will say what is missing"
	@touch $(BENCH_STAMP)

bench: $(BENCH_STAMP) $(REPEATS_LIB)
	$(PY) bench/run_all.py $(BENCH_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean-data:
	rm -rf data .prefect
