# One verb per workflow. `make` alone lists them.
# Every target that needs the environment builds it first; building is idempotent.

PYTHON ?= python3
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
BIN := $(VENV)/bin
NOTEBOOKS := examples/notebooks
STAMP := $(VENV)/.synced

# Text as one shell word: single-quoted, its own single quotes escaped.
quoted = '$(subst ','\'',$(1))'
# A make variable's raw text (never expanded by make) as one shell word.
shell_word = $(call quoted,$(value $(1)))
# make exports command-line variables to every recipe, expanding them first: `$(shell ...)` in a
# value typed for compare would run. They are passed as words instead (see `compare`, `outputs`).
unexport OLD NEW GATES NB

export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)

.DEFAULT_GOAL := help
.PHONY: help setup lab run test lint format outputs check-outputs record record-fcc compare clean
.PHONY: bench bench-fuzzy bench-compare bench-compare-size bench-gates bench-scale bench-notebooks bench-identity bench-report
.PHONY: bench-record bench-quick bench-candidates bench-labels

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet "uv==$(UV_VERSION)"

# --compile-bytecode: compile every installed library once, at build time. Machines that set
# PYTHONDONTWRITEBYTECODE=1 would otherwise recompile each library in every kernel and test run.
$(STAMP): $(UV) pyproject.toml examples/pyproject.toml uv.lock
	$(UV) sync --frozen --extra notebooks --extra cluster --compile-bytecode --python $(PYTHON)
	@touch $(STAMP)

setup: $(STAMP) ## Build .venv with the exact locked versions (needs only python3)

lab: $(STAMP) ## Open JupyterLab on 127.0.0.1 on .lab/, a git-ignored working copy of the walkthroughs
	$(BIN)/python scripts/lab.py

run: $(STAMP) ## Execute every notebook offline (replay mode) and report; rewrites nothing
	$(BIN)/python scripts/notebooks.py run

define RUFF
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
endef

# ruff takes a second; then the unit tests, the notebooks and mypy run side by side (scripts/run_tests.py).
test: $(STAMP) ## Lint, unit tests, and every notebook compared cell by cell with its stored outputs
	$(RUFF)
	$(BIN)/python scripts/run_tests.py

# mypy keeps an incremental cache in .mypy_cache (git-ignored): a run after a small change re-checks little.
lint: $(STAMP) ## ruff check and format check, notebooks included; mypy on the packages
	$(RUFF)
	$(BIN)/mypy

format: $(STAMP) ## Apply ruff fixes and formatting
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

outputs: $(STAMP) ## Re-execute notebooks in replay mode and store their outputs (NB=name to pick one)
	$(BIN)/python scripts/notebooks.py outputs $(foreach name,$(value NB),$(call quoted,$(name)))

check-outputs: $(STAMP) ## Normalize notebook metadata and fail if that changed anything
	$(BIN)/python scripts/notebooks.py normalize
	git diff --exit-code -- $(NOTEBOOKS)

# The recorders exit 1 (missing dependency), 2 (a live call failed) or 3 (no structured output);
# make shows that code as `Error N` and exits 2 itself, so CI calls `python -m fieldeval.commands.record...`.
record: $(STAMP) ## Re-record the offline invoice exchange against Bedrock (needs AWS_PROFILE)
	$(BIN)/python -m fieldeval.commands.record --schema walkthroughs.invoices:Invoice --cases data/invoices/offline_invoice.jsonl --task walkthroughs.offline_invoice:task --cassettes data/exchanges

record-fcc: $(STAMP) ## Re-record the FCC snapshot and extractions live (needs AWS_PROFILE and network)
	$(BIN)/python -m walkthroughs.fcc.record

# OLD, NEW and GATES reach the command as typed: each is passed as one single-quoted word of its
# raw text (make's `value`, so neither make nor the shell expands anything in it), and the script
# splits GATES into words without a shell. It then becomes `python -m fieldeval.commands.compare`; make
# reports that command's failure as `Error N` and exits 2 itself, so CI calls the command directly.
compare: $(STAMP) ## Compare two saved reports and apply gates: make compare OLD=a.json NEW=b.json GATES="--gate 'overall >= 0.8'"
	@$(BIN)/python scripts/make_compare.py $(call shell_word,OLD) $(call shell_word,NEW) $(call shell_word,GATES)

bench: bench-fuzzy bench-compare bench-compare-size bench-gates bench-candidates bench-labels bench-scale bench-identity bench-notebooks bench-report bench-record ## Every benchmark, each printing ratios measured in one run

# `make test` runs the same check beside the unit tests (scripts/run_tests.py).
bench-quick: $(STAMP) ## Every benchmark at its smallest size and one round (--quick), two at a time; fails on any error
	$(BIN)/python scripts/bench_quick.py

bench-fuzzy: $(STAMP) ## FuzzyEquals against deepdiff
	$(BIN)/python -m bench.bench_fuzzy

bench-compare: $(STAMP) ## Comparing two runs at scale against reading the reports
	$(BIN)/python -m bench.bench_compare

bench-compare-size: $(STAMP) ## Reading five 100,000-document results files for compare, and compare on two, against json.loads
	$(BIN)/python -m bench.bench_compare_size

bench-report: $(STAMP) ## Failures by kind in the results file against the rows alone; the 10,000-document page
	$(BIN)/python bench/bench_report.py

bench-gates: $(STAMP) ## False alarms and power of interval-end gates: joint, per-field and studentized, by simulation
	$(BIN)/python bench/bench_gates.py

bench-candidates: $(STAMP) ## A leaderboard's family-wise false-verdict rate under no change, 2 to 8 candidates, by simulation
	$(BIN)/python bench/bench_candidates.py

bench-labels: $(STAMP) ## The label audit's precision and recall at a review budget, against ranking by leaf cost alone
	$(BIN)/python -m bench.bench_labels

bench-scale: $(STAMP) ## score in one process, on 2 workers and a local Dask cluster, against the bare stickler loop
	$(BIN)/python -m bench.bench_scale

bench-identity: $(STAMP) ## The stickler speed-up's numbers against stickler's own on the fixtures and 10,000 documents
	$(BIN)/python -m bench.bench_stickler_identity

bench-record: $(STAMP) ## record --concurrency 8 against one at a time, and a throttled run's requests against one per call
	$(BIN)/python -m bench.bench_record

bench-notebooks: $(STAMP) ## make run's command against its floor (the same command on each notebook's imports alone)
	$(BIN)/python -m bench.bench_notebooks

clean: ## Remove the environments and caches
	rm -rf $(VENV) $(TOOLS) .pytest_cache .ruff_cache .mypy_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
