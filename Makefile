# dptaucc-bench — `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Offline mirror of the CLUTO matrices (byte-identical to the public URLs). Empty = use the public URLs.
DPTAUCC_MIRROR ?= $(if $(wildcard ../shared/data/cluto/MANIFEST.tsv),$(abspath ../shared/data/cluto),)
export DPTAUCC_MIRROR
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# Which results folder collect/figures/report work on: quick = results/quick/ (git-ignored, the
# default), paper = results/ (the committed paper-scale outputs; collect only rewrites a table
# from a store that holds every job of the paper grid).
SCALE ?= quick

.DEFAULT_GOAL := help
.PHONY: help setup setup-latest octave data test test-fast test-float-paths verify test-slurm slurm-install slurm-start slurm-stop slurm-status lint bench bench-authors reproduce reproduce-quick collect figures report audit audit-quick audit-ci audit-power audit-primitives audit-secure audit-estimate audit-mutants audit-false-alarms audit-sweep clean

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}'

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

#: the versions the committed results were made with (pip constraints)
LOCK ?= constraints.txt

setup: $(PY) octave ## create .venv and install the project with the [bench,test] extras at the versions of $(LOCK) (+ Octave for DPHD)
	$(PY) -m pip install -q -c $(LOCK) -e ".[bench,test]"

setup-latest: $(PY) octave ## as setup, but the newest versions pyproject.toml allows instead of the lock
	$(PY) -m pip install -q --upgrade --upgrade-strategy eager -e ".[bench,test]"

OCTAVE_PACKAGES = octave libopenblas0-pthread

octave: ## install GNU Octave with OpenBLAS for DPHD (apt, needs root; skipped with a warning otherwise)
	@if command -v octave-cli >/dev/null 2>&1 && { ! command -v dpkg >/dev/null 2>&1 || dpkg -s libopenblas0-pthread >/dev/null 2>&1; }; then \
	  echo "octave: $$(octave-cli --version | head -n1)"; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(OCTAVE_PACKAGES) >/dev/null; \
	elif command -v octave-cli >/dev/null 2>&1; then \
	  echo "warning: Octave runs on the reference BLAS; DPHD is faster with OpenBLAS (apt-get install libopenblas0-pthread)" >&2; \
	else echo "warning: GNU Octave not found and cannot be installed here; DPHD will be unavailable" >&2; fi

data: ## fetch (or copy from $$DPTAUCC_MIRROR) every available CLUTO matrix into the cache
	$(PY) -m dptaucc.datasets fetch --all

test: ## run the test suite (what CI runs)
	$(PY) -m pytest -q -n auto --dist loadfile --durations=25

#: the library's unit tests, the input contract, the docs' pointers and the doctests; no slow,
#: Octave, engine or audit tests
FAST_TESTS = tests/dptaucc tests/privacy tests/contract tests/datasets tests/baselines \
	tests/packaging/test_docs.py tests/packaging/test_doctests.py

test-fast: ## the core unit tests in about a minute (run `make test` before a merge)
	$(PY) -m pytest -q -m "not slow and not octave" $(FAST_TESTS)

test-float-paths: ## the core and seeded-output tests on a second float path: numpy's widest kernels, OpenBLAS's own and the compiled ones off, numpy's maths a ulp off
	@echo "second float path: $$($(PY) -m dptaucc.testing)"
	env $$($(PY) -m dptaucc.testing) $(PY) -m pytest -q --other-float-kernels -m "not slow and not octave" $(FAST_TESTS)

#: e.g. VERIFY_ARGS="--per-stratum 1" (CI) or "--per-stratum 10 --sample-seed 3"
VERIFY_ARGS ?=

verify: ## re-run a stratified sample of the committed results here; exit 1 if any differs beyond the float tolerance (docs/records.md)
	$(PY) -m dptaucc.bench.verify --jobs $(JOBS) $(VERIFY_ARGS)

slurm-install: ## install SLURM, munge, slurmdbd and MariaDB for a local test cluster (apt, root; idempotent)
	scripts/local_slurm.sh install

slurm-start: slurm-install ## start a one-node SLURM cluster with accounting on this machine (state in DPTAUCC_SLURM_STATE, default /tmp/dptaucc-slurm)
	scripts/local_slurm.sh start

slurm-stop: ## stop the local SLURM cluster's daemons (by their PID files)
	scripts/local_slurm.sh stop

slurm-status: ## which daemons of the local SLURM cluster run
	scripts/local_slurm.sh status

test-slurm: ## the integration tests against a running SLURM cluster (make slurm-start first)
	$(PY) -m pytest -q -m slurm tests/slurm

lint: ## ruff
	$(PY) -m ruff check .

bench: ## fit time and peak memory of every algorithm on the bundled CLUTO matrices, first fit of a fresh install
	$(PY) scripts/bench_fit.py
	$(PY) scripts/bench_baselines.py
	$(PY) scripts/bench_first_fit.py --dataset reviews --runs 3

# The authors' public code (github.com/rupensa/dptaucc) runs with its own interpreter: their
# requirements, at versions that install on Python 3.11 (numpy < 2 for pandas 2.0.3). Their DPHD
# also needs the Octave packages statistics and miscellaneous (Debian: octave-statistics
# octave-miscellaneous). AUTHORS=PATH uses a checkout; without it the repository is cloned once.
AUTHORS_VENV ?= .venv-authors
AUTHORS_REQUIREMENTS = "numpy<2" "scipy<1.14" "scikit-learn<1.5" diffprivlib==0.6.4 pandas==2.0.3 tqdm==4.66.4
AUTHORS ?=
AUTHORS_ARGS ?= --datasets cstr classic3 --loading --repeats 3

$(AUTHORS_VENV)/bin/python:
	$(PYTHON) -m venv $(AUTHORS_VENV)
	$(AUTHORS_VENV)/bin/pip install -q $(AUTHORS_REQUIREMENTS)

bench-authors: $(AUTHORS_VENV)/bin/python ## fit time of the authors' code and ours side by side (clones their repository once: network)
	$(PY) scripts/bench_vs_authors.py --authors-python $(AUTHORS_VENV)/bin/python $(if $(AUTHORS),--authors $(AUTHORS)) $(AUTHORS_ARGS)

reproduce: ## every paper/supplement experiment at paper scale into results/ (resumable), then collect, figures, report
	$(PY) -m dptaucc.bench.reproduce --scale paper --jobs $(JOBS)

reproduce-quick: ## a reduced grid of every experiment in a few minutes into results/quick/ (git-ignored)
	$(PY) -m dptaucc.bench.reproduce --scale quick --jobs $(JOBS)

collect: ## merge per-job records into <folder>/<experiment>.parquet and .csv (SCALE=quick|paper)
	$(PY) -m dptaucc.bench.outputs collect --scale $(SCALE)

figures: ## redraw every figure from the stored tables (SCALE=quick|paper; no recomputation)
	$(PY) -m dptaucc.bench.outputs figures --scale $(SCALE)

report: ## regenerate REPORT.md from the stored tables (SCALE=quick|paper)
	$(PY) -m dptaucc.bench.outputs report --scale $(SCALE)

audit: ## privacy audit of every method, end to end and per call site (about an hour on 2 cores, `--dry-run` estimates it; exit 3 on a violation) -> results/audit.parquet
	$(PY) -m dptaucc.audit --size full --jobs $(JOBS)

audit-quick: ## the audit at the quick size, corrected mode (a few minutes per method) -> results/quick/audit.parquet
	$(PY) -m dptaucc.audit --size quick --jobs $(JOBS)

audit-ci: ## CI gate: quick audit of the seeded primitives, DP-τCC and DP-KMeans (corrected); fails on a violation (exit 3)
	$(PY) -m dptaucc.audit --size quick --methods primitives,dp_taucc,dp_kmeans --jobs $(JOBS) --no-progress

audit-power: ## the audit's power: quick audit of the correct code and of every catalogue bug -> results/quick/audit_power.parquet
	$(PY) -m dptaucc.audit --power --jobs $(JOBS) --no-progress

audit-primitives: ## mechanism-level audit of every privacy primitive, seeded, secure and fresh secure samplers (a few minutes) -> results/audit_primitives.parquet
	$(PY) -m dptaucc.audit.primitives --both --fresh 2000 --output results/audit_primitives.parquet

audit-secure: ## the secure path at the quick size: call sites and ledgers on the secure samplers, fresh samplers (exit 3 on a violation) -> results/quick/audit_secure.parquet
	$(PY) -m dptaucc.audit --secure --size quick --jobs $(JOBS) --no-progress

audit-estimate: ## time a few fits of every audit and print the estimated wall time of `make audit`
	$(PY) -m dptaucc.audit --size full --jobs $(JOBS) --dry-run

#: the mutation run's sample (stratified, seeded), bounded to 10 h a call (it resumes); add --dry-run to estimate
MUTANTS_ARGS ?= --sample 100 --seed 0 --max-hours 10
audit-mutants: ## the audit's power on mutants of the privacy code, vs the tests (resumable; MUTANTS_ARGS="... --dry-run" estimates) -> results/audit_mutants.parquet
	$(PY) -m dptaucc.auditscore.mutants $(MUTANTS_ARGS)

FALSE_ALARM_ARGS ?= --primitive-repeats 200 --method-repeats 10
audit-false-alarms: ## the gate's false-alarm rate on correct code, >= 1,000 decisions with fresh seeds (resumable) -> results/audit_false_alarms.parquet
	$(PY) -m dptaucc.auditscore.false_alarms $(FALSE_ALARM_ARGS)

audit-sweep: ## the neighbour sweep of every private method's correct code at audit seeds 0-9 (exact, about 8 minutes) -> results/audit_sweep.parquet
	$(PY) -m dptaucc.audit.sweep_runs --seeds 0-9

clean: ## remove caches (not the data cache, not results/)
	rm -rf .pytest_cache .ruff_cache build dist *.egg-info
