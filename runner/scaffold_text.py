"""The text of the files ``trialhouse init`` writes beside the manifest (``runner.scaffold``):
the agent script, the target grader and the companion README (docs/runner.md, "Your first
manifest"). Each blank is a ``FILL IN:`` line ``validate`` names."""

from __future__ import annotations

AGENT_SCRIPT = """\
#!/bin/sh
# The agent under test: trialhouse starts it once per stage (build) of every attempt, inside
# the sandbox, in the trial's own checkout of the repository (its working directory).
#   $1                        the variant's model (the manifest's "model")
#   $TRIALHOUSE_PROMPT_FILE   the task (the case's prompt and the benchmark policy), markdown
#   $TRIALHOUSE_WORKSPACE     the checkout to change (the working directory)
# Exit 0 when done; what it changed is graded, whatever it says. It sees /usr, /etc, its
# workspace, a private HOME and /tmp, and nothing of the graders or reference patches; a
# program installed elsewhere goes in the manifest's isolation.read_only_paths. Variables
# reach it only when named in the variant's agent.pass_env (docs/agents.md, "Environment").
# FILL IN: the command that starts your agent on the task, e.g. exec my-agent --model "$1" --task-file "$TRIALHOUSE_PROMPT_FILE"
echo "run_agent.sh: no agent yet (fill in agent/run_agent.sh)" >&2
exit 3
"""

_PY_GRADER = '''\
"""Grader of the case {case} (layer target): exit 0 only when the change the prompt asks
for is made, 1 when it is not. trialhouse runs it on a read-only copy of the trial's final
state, named by $TRIALHOUSE_WORKSPACE; the agents never see this file. The reference patch
must make it pass and the initial commit make it fail: `trialhouse run --validation-only`
checks both before any agent runs (docs/runner.md, "Your first manifest")."""

import os
import sys

sys.path.insert(0, os.environ["TRIALHOUSE_WORKSPACE"])

# FILL IN: the check of the requested behaviour (import the code the case changes and exit 1 when it is absent)
sys.exit("grader not written yet")
'''

_SH_GRADER = """\
#!/bin/sh
# Grader of the case {case} (layer target): exit 0 only when the change the prompt asks for
# is made, 1 when it is not. trialhouse runs it on a read-only copy of the trial's final
# state, named by $TRIALHOUSE_WORKSPACE; the agents never see this file. The reference patch
# must make it pass and the initial commit make it fail: `trialhouse run --validation-only`
# checks both before any agent runs (docs/runner.md, "Your first manifest").
cd "$TRIALHOUSE_WORKSPACE" || exit 2
# FILL IN: the check of the requested behaviour (exit 1 when it is absent)
exit 1
"""


def target_grader(path: str, case: str) -> str:
    """The target grader's template, in Python for a Python repository, else shell."""
    return (_PY_GRADER if path.endswith(".py") else _SH_GRADER).format(case=case)


def companion_readme(doc: dict, *, repo: str, out: str) -> str:
    """What each part of the manifest ``init`` wrote is, and the order to fill it in."""
    case = doc["cases"][0]
    crit = {c["layer"]: c for c in case["criteria"]}
    return f"""# {doc["id"]}: a first trialhouse manifest

Written by `trialhouse init {repo}` for `{doc["repository"]}` at commit
`{doc["initial_commit"]}` (its HEAD then; uncommitted changes are not part of it). JSON has
no comments, so they are here. Every `FILL IN:` is a blank `trialhouse validate` refuses by
name until you fill it. The whole walkthrough: docs/runner.md, "Your first manifest".

## Fill in, in this order

1. `manifest.json`, `cases[0].prompt`: the task, as you would ask a colleague.
2. `references/{case["id"]}.patch`: the known answer. Make the change in the repository,
   then `git -C {repo} diff > {out}/references/{case["id"]}.patch` and undo it with
   `git -C {repo} checkout -- .` (a new file: `git -C {repo} add -N FILE` before the diff).
   `validate` checks that it applies to the commit; agents never see it.
3. `{crit["target"]["files"][0]}`: the check that passes only with the change
   (layer `target`). `trialhouse run --validation-only` proves it: it must fail on the
   commit (negative control) and pass with the reference patch (positive control).
4. `agent/run_agent.sh`: the command that starts your agent (comments inside say what it
   gets). `variants[2].model` and `variants[3].model`: the two models (or settings) to
   compare; the script receives the model as `$1`.
5. `trialhouse validate --manifest {out}/manifest.json` until it says `valid`.

## What each part is

- **Criteria, one per layer.** `target`: the requested behaviour (your grader).
  `regression`: `{" ".join(crit["regression"]["command"])}` — the repository's own tests
  still pass. `repository`: `{" ".join(crit["repository"]["command"])}` — it still
  builds. Graders run with `$TRIALHOUSE_WORKSPACE` as a read-only copy, no network, and
  `{{inputs}}` as the directory holding the files they name (`files`). A Python grader
  that imports the code it checks is marked `in_process: true`, and reports say so: code
  written to fool that grader could (docs/security.md, "The verdict channel", shows the
  hardened pattern).
- **Variants.** `null` (changes nothing: every trial should fail) and `reference` (applies
  the reference patch: every trial should pass) are reference points, never candidates.
  `my-agent` and `my-agent-alt` run your program (`agent.kind: command`): the same harness
  with two models, the comparison `trialhouse report` makes. Their `argv` names the script
  by its absolute path, which the sandbox shows read-only (nothing else of this directory):
  moving the directory means updating it.
- **Stages.** The manifest names none, so each attempt runs your agent once (`build`):
  the default when no variant is an agent CLI. Add `"stages": ["build", "qa", "review"]`
  only if your agent reads `{{stage}}`; each stage is one more paid invocation.
- **An agent CLI instead.** Claude Code, Codex or mini-swe-agent run headless as their own
  kinds, through the run's model gateway (the provider key stays outside the sandbox):
  add `{{"id": "claude-sonnet", "model": "claude-sonnet-4-5", "harness": "claude-code",
  "agent": {{"kind": "claude-code"}}}}` to `variants` and
  `"gateway": {{"mode": "forward"}}` to the manifest, with `ANTHROPIC_API_KEY` set where
  you run trialhouse (docs/agents.md). With an agent CLI in the manifest, every variant
  runs build → qa → review unless `stages` says otherwise.
- **Cases.** Copy `cases[0]` for each further task: a new `id`, `prompt`, reference patch
  and target grader; the regression and repository criteria can stay as they are.
- `repetitions: 2` runs every case twice per variant (consistency needs at least 2);
  `timeout_seconds: 900` is per trial.

## Then

```sh
trialhouse run --manifest {out}/manifest.json --output runs/first --validation-only
trialhouse run --manifest {out}/manifest.json --output runs/first-trials
trialhouse ingest runs/first-trials --warehouse warehouse/trialhouse.duckdb
trialhouse report --warehouse warehouse/trialhouse.duckdb --output reports/first
```
"""
