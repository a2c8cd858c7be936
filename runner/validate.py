"""Static manifest checks that report every problem at once, each at its JSON path.

Every value is first held to what a run can use (``runner.manifest.value_problems``: no
NUL byte, valid Unicode, finite numbers, bounded length and nesting), so nothing later is
handed a value that would raise. Shapes and ranges come from the pydantic models (errors
turned into locations like ``cases[3].criteria[0].command``); file-system and git checks
(input paths, commits, reference patches) run on the raw document so they are reported
even when the shape is also wrong, but never on a value already refused. The source
repository is only read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contract.call_events import Provider
from contract.values import MAX_DEPTH
from runner import git
from runner.errors import RunnerError
from runner.manifest import CASE_VARIANT_ID_MAX, Manifest, path_problem, value_problems
from runner.manifest.document import expand_sweeps
from runner.manifest.sweeps import without_branch
from runner.paths import check_input, input_refs
from runner.placeholders import placeholder_problems

SHA_RE = re.compile(r"^[0-9a-f]{40}$")


class ManifestInvalid(RunnerError):
    """Raised by commands that need a valid manifest."""

    def __init__(self, path: Path, problems: list[Problem]) -> None:
        first = problems[0]
        more = f" (and {len(problems) - 1} more; run `trialhouse validate --manifest {path}`)" if len(problems) > 1 else ""
        super().__init__(f"{path}: {first.location}: {first.message}{more}")
        self.problems = problems


@dataclass(frozen=True)
class Problem:
    location: str
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


@dataclass
class ValidationReport:
    path: Path
    problems: list[Problem] = field(default_factory=list)
    manifest: Manifest | None = None
    """Set whenever the shape parsed, even if file/git checks failed."""
    notes: list[str] = field(default_factory=list)
    """What the checks found that is worth printing (the agent CLIs found and their versions)."""

    @property
    def ok(self) -> bool:
        return not self.problems and self.manifest is not None

    def add(self, problem: Problem) -> None:
        """Report ``problem`` unless the same one is already reported."""
        if problem not in self.problems:
            self.problems.append(problem)


def json_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(manifest)"


_PLAIN = {
    "missing": "required field is missing",
    "extra_forbidden": "unknown field (check the spelling against `trialhouse schema manifest`)",
    "list_type": "must be a list",
    "string_type": "must be a string",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "bool_type": "must be true or false",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
}


def _message(err: Mapping[str, Any]) -> tuple[tuple[Any, ...], str]:
    loc, typ, msg = tuple(err["loc"]), err["type"], err["msg"]
    if loc == ("schema_version",) and typ in ("literal_error", "missing"):
        return loc, "must be 1 (this trialhouse reads manifest schema version 1)"
    if typ == "too_short" and loc and loc[-1] in ("command", "argv"):
        return loc, "must be a non-empty list of strings"
    if typ == "string_pattern_mismatch":
        return loc, "must start with a letter or digit and use only letters, digits, '.', '_' or '-'"
    if typ == "string_too_long" and len(loc) == 3 and loc[0] in ("cases", "variants") and loc[2] == "id":
        return loc, (f"must be at most {CASE_VARIANT_ID_MAX} characters (each trial directory is named "
                     "<case>__<variant>__r<rep> and must fit a 255-byte file name)")
    if typ == "finite_number":
        return loc, "must be a finite number (not NaN or Infinity)"
    if typ == "value_error":
        return loc, msg.removeprefix("Value error, ")
    if typ in _PLAIN:
        return loc, _PLAIN[typ]
    return loc, msg[0].lower() + msg[1:] if msg else typ


def _load(path: Path) -> tuple[Any, list[Problem]]:
    if path.is_dir():
        inside = path / "manifest.json"
        hint = (f"pass --manifest {inside}" if inside.is_file()
                else "give the manifest's JSON file (e.g. DIR/manifest.json)")
        return None, [Problem("(manifest)", f"{path} is a directory; {hint}")]
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [Problem("(manifest)", f"file not found: {path}")]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem("(manifest)", f"cannot read {path}: {exc}")]
    try:
        return json.loads(text), []
    except json.JSONDecodeError as exc:
        return None, [Problem(f"line {exc.lineno} column {exc.colno}", f"malformed JSON: {exc.msg}")]
    except RecursionError:
        return None, [Problem("(manifest)", f"nested far too deeply (the limit is {MAX_DEPTH} levels)")]


def _fs(check: Callable[[], str | None]) -> str | None:
    """Run a file-system or git check; an OS error (a name too long for this system, …) is its answer."""
    try:
        return check()
    except OSError as exc:
        return f"cannot be checked: {exc.strerror or exc}"


def repo_path(base: Path, repository: str) -> Path:
    p = Path(repository)
    return p if p.is_absolute() else base / p


def validate_manifest(path: Path, *, agents_here: bool = True) -> ValidationReport:
    """Check a manifest file completely; never raises for bad input. ``agents_here=False``: the
    agents run on other machines (Ray), so their absolute paths are not checked on this one."""
    path = Path(path)
    report = ValidationReport(path)
    raw, problems = _load(path)
    report.problems += problems
    if raw is None:
        return report
    if not isinstance(raw, dict):
        report.problems.append(Problem("(manifest)", "must be a JSON object"))
        return report
    base = path.resolve().parent
    blanks = [Problem(loc, msg) for loc, msg in placeholder_problems(raw, base)]
    manifest = _check_shape(report, raw)
    # Input files, on the raw document (lenient), so they show next to shape errors.
    for ref in input_refs(raw):
        if path_problem(ref.rel) is None:  # a refused path is reported above, never opened
            why = _fs(partial(check_input, base, ref.rel, kind=ref.kind, limit=ref.limit))
            if why:
                report.add(Problem(ref.location, why))
    _Repositories(report, base).check(raw)
    if manifest is not None:
        # The checks that need this machine import the agents, the gateway and the judges
        # (aiohttp among them): only for a manifest that parsed, so a broken one fails fast.
        from runner.judges.config import judge_problems
        from runner.visible import check_problems

        _check_agents(report, manifest, base)
        _check_command_paths(report, manifest, base, agents_here)
        for loc, msg in [*judge_problems(manifest, base), *check_problems(manifest)]:
            report.add(Problem(loc, msg))
        report.notes.append(network_note(manifest))
    if blanks:  # a blank is the one problem at its location (not also "does not apply cleanly")
        at = {b.location for b in blanks}
        report.problems = blanks + [p for p in report.problems if p.location not in at]
    report.manifest = expand_sweeps(manifest) if manifest is not None else None  # a sweep: one variant per point
    return report


NETWORK_WORDS = {"none": "agents have loopback only", "gateway": "agents reach the model gateway only",
                 "open": "agents have the host's network: results are labelled \"network open\""}


def network_note(manifest: Manifest) -> str:
    """What ``isolation.network`` resolved to, in words (``validate`` prints it)."""
    policy, declared = manifest.network_policy, manifest.isolation.network
    text = f"isolation.network: {policy} ({NETWORK_WORDS[policy]}; graders have no network)"
    if isinstance(declared, bool):
        text += f"; {str(declared).lower()} is the old spelling of {policy}"
    if manifest.isolation.allow_hosts:
        text += f"; allowed through the gateway's proxy: {', '.join(manifest.isolation.allow_hosts)}"
    return text


def _check_shape(report: ValidationReport, raw: dict[str, Any]) -> Manifest | None:
    """Every unusable value and every shape error; the manifest when there is neither."""
    unusable = value_problems(raw)
    for loc, why in unusable:
        report.add(Problem(json_path(loc), why))
    manifest: Manifest | None = None
    if not any("nested more than" in why for _loc, why in unusable):  # too deep for the models to walk
        try:
            manifest = Manifest.model_validate(raw)
        except ValidationError as exc:
            for err in exc.errors():
                plain = without_branch(raw, tuple(err["loc"]))
                if plain is not None:
                    where, message = _message({**err, "loc": plain})
                    report.add(Problem(json_path(where), message))
        if unusable:
            manifest = None
    if manifest is None:
        # The model stops at the first failing level; duplicate ids are cheap to re-check.
        for what, key in (("case", "cases"), ("variant", "variants")):
            listed = raw.get(key)
            items = listed if isinstance(listed, list) else []
            ids: list[str] = [i["id"] for i in items if isinstance(i, dict) and isinstance(i.get("id"), str)]
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            if dupes:
                report.add(Problem("(manifest)", f"duplicate {what} ids: {', '.join(dupes)}"))
    return manifest


def _usable(value: Any) -> str | None:
    """``value`` when it is a path this system can open (refused ones are reported already)."""
    return value if isinstance(value, str) and path_problem(value) is None else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class _Repositories:
    """The repositories, commits and reference patches of a raw manifest (git reads only)."""

    def __init__(self, report: ValidationReport, base: Path) -> None:
        self.report, self.base = report, base
        self.repo_ok: dict[str, bool] = {}

    def check(self, raw: dict[str, Any]) -> None:
        default_repo = _usable(raw.get("repository"))
        default_commit = _text(raw.get("initial_commit"))
        top_ok = False
        if default_repo and self.repo("repository", default_repo) and default_commit:
            top_ok = self.commit("initial_commit", default_repo, default_commit)
        listed = raw.get("cases")
        for ci, case in enumerate(listed if isinstance(listed, list) else []):
            if isinstance(case, dict):
                self.case(ci, case, default_repo, default_commit, top_ok)

    def case(self, ci: int, case: dict[str, Any], default_repo: str | None, default_commit: str | None,
             top_ok: bool) -> None:
        """One case's repository, commit and reference patch (the manifest's by default)."""
        if isinstance(case.get("repository"), str) and _usable(case.get("repository")) is None:
            return  # refused above
        repo = _usable(case.get("repository")) or default_repo
        sha = _text(case.get("initial_commit"))
        if repo is None:
            return
        if "repository" in case and isinstance(case.get("repository"), str):
            if not self.repo(f"cases[{ci}].repository", repo):
                return
        elif not self.repo_ok.get(repo, False):
            return
        if sha is not None:
            ok_commit = self.commit(f"cases[{ci}].initial_commit", repo, sha)
        else:
            sha = default_commit
            ok_commit = top_ok if repo == default_repo else bool(
                sha and self.commit(f"cases[{ci}].repository", repo, sha)
            )
        patch_rel = _usable(case.get("reference_patch"))
        # ok_commit holds only for a commit that exists, so sha is one then
        if ok_commit and sha and patch_rel is not None and _fs(lambda: check_input(self.base, patch_rel)) is None:
            self.patch(f"cases[{ci}].reference_patch", repo, sha, patch_rel)

    def repo(self, loc: str, repo: str) -> bool:
        if repo not in self.repo_ok:
            rp = repo_path(self.base, repo)
            why = _fs(lambda: None if git.is_repository(rp) else f"not a git repository: {rp}")
            self.repo_ok[repo] = why is None
            if why:
                self.report.add(Problem(loc, why))
        return self.repo_ok[repo]

    def commit(self, loc: str, repo: str, sha: str) -> bool:
        if not SHA_RE.match(sha):
            self.report.add(Problem(loc, "must be a full 40-character lowercase hex commit SHA"))
            return False
        why = _fs(lambda: None if git.commit_exists(repo_path(self.base, repo), sha)
                  else f"commit {sha} does not exist in {repo_path(self.base, repo)}")
        if why:
            self.report.add(Problem(loc, why))
            return False
        return True

    def patch(self, loc: str, repo: str, sha: str, patch_rel: str) -> None:
        try:
            ok, msg = git.patch_applies(repo_path(self.base, repo), sha, self.base / patch_rel)
        except OSError as exc:
            ok, msg = False, f"cannot be checked: {exc.strerror or exc}"
        if not ok:
            first = msg.splitlines()[0] if msg else "git apply --check failed"
            self.report.add(Problem(loc, f"does not apply cleanly to {sha[:12]}: {first}"))


def protected_paths(manifest: Manifest, base: Path, *extra: Path) -> tuple[Path, ...]:
    """Host paths no automatic sandbox mount may expose: the manifest directory (graders,
    reference patches), the source repositories, and ``extra`` (the run directory)."""
    repos = {repo_path(base, manifest.repository)} | {repo_path(base, c.repository) for c in manifest.cases
                                                      if c.repository}
    return tuple(p.resolve() for p in (base, *sorted(repos), *extra))


def _check_agents(report: ValidationReport, manifest: Manifest, base: Path) -> None:
    """The harness CLIs (installed? which version? visible in the sandbox?) and the gateway
    (scripts parse, provider keys present): checks that need this machine, not the file."""
    from runner.agents.harness import provider_of
    from runner.agents.harness_stage import resolve
    from runner.gateway.run import parse_script, upstreams

    protected = protected_paths(manifest, base)
    providers: set[Provider] = set()
    for i, v in enumerate(manifest.variants):
        if not v.agent.is_harness:
            continue
        gated = manifest.uses_gateway(v)
        if gated:
            providers.add(provider_of(v.agent.kind, v.model))
        found = resolve(v, base, uses_gateway=gated, isolated=manifest.isolation.backend == "bubblewrap",
                        protected=protected)
        for where, why in found.problems:
            report.problems.append(Problem(f"variants[{i}].{where}", why))
        if found.harness is not None:
            h = found.harness
            shown = ", ".join(str(m) for m in h.mounts) or "nothing extra"
            report.notes.append(f"variants[{i}] {v.id}: {v.agent.kind} {h.version} at {h.settings.binary} "
                                f"(visible in the sandbox: {shown})")
    gw = manifest.gateway
    if gw is None:
        return
    users = [v.id for v in manifest.variants if manifest.uses_gateway(v)]
    report.notes.append(f"gateway: {gw.mode} mode for {', '.join(users) or 'no variant'}")
    if gw.mode == "scripted":
        named = {"gateway.script": gw.script, **{f"gateway.scripts.{k}": p for k, p in gw.scripts.items()}}
        for loc, rel in named.items():
            if rel is None or check_input(base, rel) is not None:
                continue  # a missing file is already reported
            try:
                parse_script((base / rel).read_text(encoding="utf-8"), rel)
            except (RunnerError, OSError, UnicodeDecodeError) as exc:
                report.problems.append(Problem(loc, str(exc)))
    if gw.mode in ("forward", "record"):
        for provider in sorted(providers):
            up = upstreams(gw)[provider]
            if up.api_key_env and not os.environ.get(up.api_key_env):
                loc = f"gateway.upstreams.{provider}.api_key_env" if provider in gw.upstreams else "gateway"
                report.problems.append(Problem(loc, f"{up.api_key_env} is not set in this environment: the gateway "
                                                    f"sends it to {up.base_url} for the agents' {provider} calls"))


def _check_command_paths(report: ValidationReport, manifest: Manifest, base: Path, agents_here: bool) -> None:
    """Every path a ``command`` agent's argv names, resolved where the agent will run
    (``runner.agents.command_paths``); one (repository, commit) per case source, checked once."""
    from runner.agents.command_paths import command_path_problems

    if not any(v.agent.kind == "command" for v in manifest.variants):
        return
    sources: dict[tuple[Path, str], str] = {}
    for c in manifest.cases:
        repo = repo_path(base, c.repository or manifest.repository)
        commit = c.initial_commit or manifest.initial_commit
        if (repo, commit) not in sources and git.is_repository(repo) and git.commit_exists(repo, commit):
            sources[(repo, commit)] = c.id
    rows = [(case_id, repo, commit) for (repo, commit), case_id in sources.items()]
    for loc, why in command_path_problems(manifest, base, rows, agents_here):
        report.add(Problem(loc, why))


def load_valid_manifest(path: Path, *, agents_here: bool = True) -> Manifest:
    """The parsed manifest, or ``ManifestInvalid`` naming the first problem."""
    report = validate_manifest(path, agents_here=agents_here)
    if not report.ok:
        raise ManifestInvalid(Path(path), report.problems)
    assert report.manifest is not None
    return report.manifest
