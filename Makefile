# trialhouse — one Makefile, two commands that matter: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   := demo
JOBS   ?= 4
# pytest-xdist workers for make test (a test module stays on one worker: its fixtures are shared).
# 2 on 2 cores: the suite is CPU-bound (94 % of both cores at -n 2; -n 3 gave the same wall time).
TEST_WORKERS ?= 2
TH     := $(BIN)/trialhouse
WH     := $(DEMO)/warehouse/trialhouse.duckdb
FOREIGN := examples/foreign/runs.jsonl examples/foreign/inspect-arith.eval examples/foreign/harbor-job examples/foreign/swebench-submission
RUN_ID := $(BIN)/python -c "import json; print(json.load(open('$(DEMO)/runs/main/report.json'))['run_id'])"
SWEEP_ID := $(BIN)/python -c "import json; print(json.load(open('$(DEMO)/runs/sweep/report.json'))['run_id'])"
# compare and report get the same baseline (and so the same candidates and Holm family)
BASELINE := sim-alpha-minimal

.DEFAULT_GOAL := help
.PHONY: help venv demo test test-e2e test-recipes test-scale test-cgroup2 vm-tools lint lab bench fuzz schema chromium bubblewrap tools recipe-tools node clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

# editable_mode=compat: a path entry in site-packages instead of setuptools' import-hook finder,
# which cost every Python the venv starts (each grader, each Python agent) 15 ms of imports
# (bench/README.md, Runner); its "transitional mode" notice is silenced, the rest of the
# install is quiet (tests/test_packaging.py: no "Package would be ignored" warnings)
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	PYTHONWARNINGS='ignore:Compat editable installs' $(BIN)/python -m pip install --quiet -e '.[test,notebooks,ray]' --config-settings editable_mode=compat
	touch $(STAMP)

venv: $(STAMP) ## create .venv and install trialhouse with the test, notebook and ray extras

demo: $(STAMP) bubblewrap ## run the main job: example corpus → validate → controls → trials → warehouse → summary → report
	@rm -rf $(DEMO)
	$(TH) example $(DEMO)/corpus
	$(TH) validate --manifest $(DEMO)/corpus/manifest.json
	$(TH) run --manifest $(DEMO)/corpus/manifest.json --output $(DEMO)/runs/controls --validation-only --jobs $(JOBS)
	$(TH) run --manifest $(DEMO)/corpus/manifest.json --output $(DEMO)/runs/main --jobs $(JOBS)
	@# a budget sweep of a simulated agent, with one visible check: its own manifest (docs/example-corpus.md)
	$(TH) run --manifest $(DEMO)/corpus/sweep.json --output $(DEMO)/runs/sweep --jobs $(JOBS)
	$(TH) ingest $(DEMO)/runs/controls $(DEMO)/runs/main $(DEMO)/runs/sweep $(FOREIGN) --prices examples/foreign/prices.json --warehouse $(WH)
	$(TH) calibrate-judge --manifest $(DEMO)/corpus/manifest.json --rubric rubrics/fits-the-codebase.md --dataset $(DEMO)/corpus/rubrics/fits-the-codebase.calibration.json --variant sim-alpha-planner --warehouse $(WH)
	$(TH) review import $(DEMO)/corpus/reviews/reviews.csv --rubric $(DEMO)/corpus/reviews/grid.yaml --warehouse $(WH)
	$(TH) review summary --warehouse $(WH)
	$(TH) inspect-queue --warehouse $(WH) --run $$($(RUN_ID)) --runs-root $(DEMO)/runs/main
	$(TH) summarize --warehouse $(WH)
	$(TH) compare --warehouse $(WH) --run $$($(RUN_ID)) --baseline $(BASELINE)
	$(TH) view --warehouse $(WH) --bundle $(DEMO)/reports/viewer
	$(TH) report --warehouse $(WH) --run $$($(RUN_ID)) --baseline $(BASELINE) --output $(DEMO)/reports/latest --bundle $(DEMO)/reports/viewer
	$(TH) budget-curve --warehouse $(WH) --run $$($(SWEEP_ID))
	$(TH) visibility --warehouse $(WH) --run $$($(SWEEP_ID))
	$(TH) report --warehouse $(WH) --run $$($(SWEEP_ID)) --output $(DEMO)/reports/sweep --bundle $(DEMO)/reports/viewer
	@echo
	@echo "run:        $(DEMO)/runs/main  (events.jsonl, report.json, trials/)"
	@echo "warehouse:  $(WH)  (try: $(TH) sql -w $(WH) 'SELECT outcome, count(*) FROM trials GROUP BY 1')"
	@echo "report:     $(DEMO)/reports/latest/report.html  (trial ids link to the bundle's pages)"
	@echo "sweep:      $(DEMO)/reports/sweep/report.html  (quality at several budgets; visible and hidden checks)"
	@echo "viewer:     $(TH) view -w $(WH) --reviews $(DEMO)/reviews.jsonl --rubric $(DEMO)/corpus/reviews/grid.yaml"
	@echo "bundle:     $(DEMO)/reports/viewer/index.html  (the same pages as a static site)"
	@echo "notebooks:  make lab"

test: $(STAMP) chromium bubblewrap tools ## install everything (bubblewrap, Chromium, the pinned agent CLIs), lint, type-check, and run the whole test suite (the aider/OpenHands recipes: make test-recipes)
	$(BIN)/ruff check contract trialhouse runner ingest warehouse analysis viewer tests bench
	$(BIN)/mypy contract runner ingest warehouse analysis viewer trialhouse
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --durations=15 -m "not scale and not ray_cluster and not recipes and not e2e"
	@# the Ray-cluster tests after the rest, with the machine to themselves: a raylet started under
	@# load can miss its dashboard-agent start window (ray-project/ray#65983)
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=5 -m "ray_cluster and not scale"

test-e2e: $(STAMP) chromium bubblewrap tools ## the end-to-end walk-throughs (pipeline, budget sweep, terminal widths, first manifest, the rollout features), kept out of make test's 15 minutes
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --durations=10 -m "e2e"

test-recipes: $(STAMP) bubblewrap recipe-tools ## the aider and OpenHands command-agent recipes against their pinned PyPI releases (~1.5 GB of installs, kept out of make test's 15 minutes)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m recipes tests/runner/agents/test_command_recipes.py

test-scale: $(STAMP) bubblewrap ## the Ray executor tests with the large sizes (a 500 MB repository; a few minutes)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m ray_cluster tests/runner/test_ray_executor.py

test-cgroup2: $(STAMP) bubblewrap vm-tools ## the cgroup v2 sandbox path and the containment attacks, as root in a guest kernel with cgroup v1 off (qemu, emulated: ~15 min)
	python3 tests/vm/cgroup2_vm.py -- $(BIN)/python -m pytest -q -p no:cacheprovider -p no:xdist --durations=5 tests/runner/test_cgroup_v2.py tests/runner/test_containment_attacks.py

lint: $(STAMP) ## ruff
	$(BIN)/ruff check contract trialhouse runner ingest warehouse analysis viewer tests bench

lab: $(STAMP) ## open JupyterLab on the notebooks (uses the demo warehouse by default)
	TRIALHOUSE_WAREHOUSE=$(abspath $(WH)) $(BIN)/jupyter lab notebooks/

fuzz: $(STAMP) ## seeded fuzzing: 520 event files, 449 manifests, 60 runs-jsonl files (columnar vs row path), 500 foreign results, 40 hostile files, 30 analysis warehouses; 0 findings expected
	$(BIN)/python tests/fuzz/fuzz.py --events 520 --manifests 449 --runs-jsonl 60 --foreign 500 --hostile 40 --analysis 30 --seed 14

bench: $(STAMP) ## reproducible benchmarks at 1M events/trials; rewrites bench/results.md (see bench/README.md)
	$(BIN)/python -m pip install --quiet -e '.[inspect]' --config-settings editable_mode=compat  # the Inspect import bench measures against inspect-ai itself
	$(BIN)/python bench/run_all.py

schema: $(STAMP) ## regenerate the committed JSON Schemas
	$(BIN)/python -m trialhouse schema events > contract/schemas/events.v1.json
	$(BIN)/python -m trialhouse schema manifest > runner/schemas/manifest.v1.json

chromium: ## install Debian's headless Chromium for the browser test where missing
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian chromium for the report browser test"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || { echo "could not install chromium: run 'apt-get install chromium' as root"; exit 1; }; }

bubblewrap: ## install Debian's bubblewrap, libseccomp and setpriv (the default isolation backend) where missing
	@{ command -v bwrap && command -v setpriv && ldconfig -p | grep -q libseccomp.so.2; } >/dev/null 2>&1 || { \
	  echo "installing Debian bubblewrap, libseccomp2 and util-linux (agents and graders run in its sandbox)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap libseccomp2 util-linux >/dev/null) \
	  || { echo "could not install bubblewrap: run 'apt-get install bubblewrap libseccomp2 util-linux' as root, or set isolation.backend to none"; exit 1; }; }

vm-tools: ## install Debian's qemu, generic kernel (it has 9p) and static busybox for make test-cgroup2 where missing
	@{ command -v qemu-system-x86_64 && command -v busybox && command -v cpio && ls /boot/vmlinuz-*-amd64 | grep -vq cloud; } >/dev/null 2>&1 || { \
	  echo "installing Debian qemu-system-x86, linux-image-amd64, busybox-static and cpio for the cgroup v2 guest"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-x86 linux-image-amd64 busybox-static cpio kmod >/dev/null) \
	  || { echo "could not install the guest's parts: run 'apt-get install qemu-system-x86 linux-image-amd64 busybox-static cpio kmod' as root"; exit 1; }; }

# Real agent CLIs, pinned, in a project-local folder (never the user's global npm/pip).
# One directory per tool and version, a stamp file when complete, and tools/bin/<cli>
# pointing at the pinned one: re-running is a no-op, bumping a version is one variable.
TOOLS               := tools
CLAUDE_CODE_VERSION ?= 2.1.332
CODEX_VERSION       ?= 0.171.0
MINI_SWE_AGENT_VERSION ?= 2.4.6
LITELLM_VERSION     ?= 1.110.2
CLAUDE_DIR := $(TOOLS)/claude-code-$(CLAUDE_CODE_VERSION)
CODEX_DIR  := $(TOOLS)/codex-$(CODEX_VERSION)
MINI_DIR   := $(TOOLS)/mini-swe-agent-$(MINI_SWE_AGENT_VERSION)
AIDER_VERSION       ?= 0.86.2
AIDER_DIR  := $(TOOLS)/aider-chat-$(AIDER_VERSION)
OPENHANDS_VERSION   ?= 1.16.0
OPENHANDS_PYTHON    ?= python3.12
OPENHANDS_DIR := $(TOOLS)/openhands-$(OPENHANDS_VERSION)

tools: $(CLAUDE_DIR)/.installed $(CODEX_DIR)/.installed $(MINI_DIR)/.installed ## install the pinned agent CLIs into tools/ (Claude Code, Codex, mini-swe-agent)
	@mkdir -p $(TOOLS)/bin
	@ln -sfn ../claude-code-$(CLAUDE_CODE_VERSION)/node_modules/.bin/claude $(TOOLS)/bin/claude
	@ln -sfn ../codex-$(CODEX_VERSION)/node_modules/.bin/codex $(TOOLS)/bin/codex
	@ln -sfn ../mini-swe-agent-$(MINI_SWE_AGENT_VERSION)/bin/mini $(TOOLS)/bin/mini
	@# one line on success; mini has no --version (it prints an error box): its package metadata says it
	@echo "agent CLIs in $(TOOLS)/bin: claude $$($(TOOLS)/bin/claude --version), $$($(TOOLS)/bin/codex --version), mini-swe-agent $$($(MINI_DIR)/bin/python -c 'import importlib.metadata as m; print(m.version("mini-swe-agent"))')"

recipe-tools: $(AIDER_DIR)/.installed $(OPENHANDS_DIR)/.installed ## install the pinned CLIs of the command-agent recipes into tools/ (aider, OpenHands; PyPI only)
	@$(AIDER_DIR)/bin/aider --version

node: ## install Debian's nodejs and npm where missing (Node >= 18 for the agent CLIs)
	@command -v npm >/dev/null 2>&1 && node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 18 ? 1 : 0)' || { \
	  echo "installing Debian nodejs and npm for the agent CLIs"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null) \
	  || { echo "could not install nodejs/npm: run 'apt-get install nodejs npm' as root"; exit 1; }; }

$(CLAUDE_DIR)/.installed:
	@$(MAKE) --no-print-directory node
	@echo "installing Claude Code $(CLAUDE_CODE_VERSION) into $(CLAUDE_DIR)"
	@rm -rf $(CLAUDE_DIR) && mkdir -p $(CLAUDE_DIR)
	@npm install --prefix $(CLAUDE_DIR) --no-audit --no-fund --loglevel=error --save-exact @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) >/dev/null
	@touch $@

$(CODEX_DIR)/.installed:
	@$(MAKE) --no-print-directory node
	@echo "installing Codex $(CODEX_VERSION) into $(CODEX_DIR)"
	@rm -rf $(CODEX_DIR) && mkdir -p $(CODEX_DIR)
	@npm install --prefix $(CODEX_DIR) --no-audit --no-fund --loglevel=error --save-exact @openai/codex@$(CODEX_VERSION) >/dev/null
	@touch $@

$(AIDER_DIR)/.installed:
	rm -rf $(AIDER_DIR)
	$(PYTHON) -m venv $(AIDER_DIR)
	$(AIDER_DIR)/bin/python -m pip install --quiet aider-chat==$(AIDER_VERSION)
	touch $@

$(OPENHANDS_DIR)/.installed:
	@command -v $(OPENHANDS_PYTHON) >/dev/null 2>&1 || { echo "the OpenHands CLI needs Python >= 3.12: install it, or set OPENHANDS_PYTHON"; exit 1; }
	rm -rf $(OPENHANDS_DIR)
	$(OPENHANDS_PYTHON) -m venv $(OPENHANDS_DIR)
	$(OPENHANDS_DIR)/bin/python -m pip install --quiet openhands==$(OPENHANDS_VERSION)
	touch $@

$(MINI_DIR)/.installed:
	@echo "installing mini-swe-agent $(MINI_SWE_AGENT_VERSION) into $(MINI_DIR)"
	@rm -rf $(MINI_DIR)
	@$(PYTHON) -m venv $(MINI_DIR)
	@$(MINI_DIR)/bin/python -m pip install --quiet mini-swe-agent==$(MINI_SWE_AGENT_VERSION) litellm==$(LITELLM_VERSION)
	@touch $@

clean: ## remove the venv and demo output
	rm -rf $(VENV) $(DEMO)
