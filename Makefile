# trialhouse — one Makefile, two commands that matter: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   := demo
JOBS   ?= 4
TH     := $(BIN)/trialhouse
WH     := $(DEMO)/warehouse/trialhouse.duckdb
FOREIGN := examples/foreign/runs.jsonl examples/foreign/inspect-arith.eval examples/foreign/harbor-job examples/foreign/swebench-submission
RUN_ID := $(BIN)/python -c "import json; print(json.load(open('$(DEMO)/runs/main/report.json'))['run_id'])"

.DEFAULT_GOAL := help
.PHONY: help venv demo test lint lab bench fuzz schema chromium clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,notebooks]'
	touch $(STAMP)

venv: $(STAMP) ## create .venv and install trialhouse with test and notebook extras

demo: $(STAMP) ## run the main job: example corpus → validate → controls → trials → warehouse → summary → report
	@rm -rf $(DEMO)
	$(TH) example $(DEMO)/corpus
	$(TH) validate --manifest $(DEMO)/corpus/manifest.json
	$(TH) run --manifest $(DEMO)/corpus/manifest.json --output $(DEMO)/runs/controls --validation-only --jobs $(JOBS)
	$(TH) run --manifest $(DEMO)/corpus/manifest.json --output $(DEMO)/runs/main --jobs $(JOBS)
	$(TH) ingest $(DEMO)/runs/controls $(DEMO)/runs/main $(FOREIGN) --prices examples/foreign/prices.json --warehouse $(WH)
	$(TH) summarize --warehouse $(WH)
	$(TH) compare --warehouse $(WH) --run $$($(RUN_ID)) --baseline sim-alpha-minimal --candidate sim-alpha-planner --candidate sim-beta-minimal
	$(TH) report --warehouse $(WH) --run $$($(RUN_ID)) --output $(DEMO)/reports/latest
	@echo
	@echo "run:        $(DEMO)/runs/main  (events.jsonl, report.json, trials/)"
	@echo "warehouse:  $(WH)  (try: $(TH) sql -w $(WH) 'SELECT outcome, count(*) FROM trials GROUP BY 1')"
	@echo "report:     $(DEMO)/reports/latest/report.html"
	@echo "notebooks:  make lab"

test: $(STAMP) chromium ## install everything, lint, and run the whole test suite
	$(BIN)/ruff check trialhouse runner ingest warehouse analysis tests bench
	$(BIN)/python -m pytest -q -p no:cacheprovider

lint: $(STAMP) ## ruff
	$(BIN)/ruff check trialhouse runner ingest warehouse analysis tests bench

lab: $(STAMP) ## open JupyterLab on the notebooks (uses the demo warehouse by default)
	TRIALHOUSE_WAREHOUSE=$(abspath $(WH)) $(BIN)/jupyter lab notebooks/

fuzz: $(STAMP) ## seeded fuzzing: 520 event files and 449 manifests, 0 findings expected (tests/fuzz)
	$(BIN)/python tests/fuzz/fuzz.py --events 520 --manifests 449 --seed 14

bench: $(STAMP) ## reproducible benchmarks (see bench/README.md)
	$(BIN)/python bench/run_all.py

schema: $(STAMP) ## regenerate the committed JSON Schemas
	$(BIN)/python -m trialhouse schema events > runner/schemas/events.v1.json
	$(BIN)/python -m trialhouse schema manifest > runner/schemas/manifest.v1.json

chromium: ## install Debian's headless Chromium for the browser test where missing
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian chromium for the report browser test"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || { echo "could not install chromium: run 'apt-get install chromium' as root"; exit 1; }; }

clean: ## remove the venv and demo output
	rm -rf $(VENV) $(DEMO)
