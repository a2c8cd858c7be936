"""Manifest v1: the benchmark definition, as pydantic models.

The models check shapes, ranges, defaults and uniqueness. Checks that need the
file system or git (input paths, commits, reference patches) live in
``runner.validate`` so that ``trialhouse validate`` can report every problem at once.

Every value must also be usable by the run that follows (``runner.manifest.values``: the
value rules ``runner.validate`` applies to the raw document first).

The package: ``values`` (limits, constrained types, ``value_problems``), ``cases`` (cases
and their criteria), ``variants`` (variants, their agents and judges, ``config_id``) and
``document`` (the manifest with its run-wide settings, and its JSON Schema), ``sweeps``
(budget sweeps expanded into configurations). Callers import
the names below from here.
"""

from runner.manifest.cases import (
    DEFAULT_SEVERITY,
    TAG_KEYS,
    TIERS,
    Bank,
    BankDraw,
    Case,
    Criterion,
    HiddenPool,
    Judge,
    Labels,
)
from runner.manifest.document import (
    MANIFEST_SCHEMA_VERSION,
    GatewaySettings,
    Isolation,
    Manifest,
    Resources,
    Rotation,
    Upstream,
    expand_sweeps,
    manifest_dir,
    manifest_json_schema,
)
from runner.manifest.sweeps import budget_fields, point_id, sweep_budget, without_branch
from runner.manifest.values import (
    CASE_VARIANT_ID_MAX,
    MAX_TEXT,
    NAME_MAX_BYTES,
    PATH_MAX_BYTES,
    Argv,
    CaseVariantId,
    EnvName,
    Id,
    NonEmptyStr,
    PathStr,
    StageName,
    Strict,
    path_problem,
    value_problems,
)
from runner.manifest.variants import (
    BUDGET_FIELDS,
    HARNESS_FIELDS,
    HARNESS_KINDS,
    Agent,
    Evaluations,
    JudgeSettings,
    Variant,
    config_id,
)

__all__ = [
    "TAG_KEYS", "TIERS", "Bank", "BankDraw",
    "BUDGET_FIELDS", "CASE_VARIANT_ID_MAX", "DEFAULT_SEVERITY", "HARNESS_FIELDS", "HARNESS_KINDS", "MANIFEST_SCHEMA_VERSION",
    "MAX_TEXT", "NAME_MAX_BYTES", "PATH_MAX_BYTES", "Agent", "Argv", "Case", "CaseVariantId", "Criterion",
    "EnvName", "Evaluations", "GatewaySettings", "HiddenPool", "Id", "Isolation", "Judge", "JudgeSettings", "Labels",
    "Manifest", "NonEmptyStr", "PathStr", "Resources", "Rotation", "StageName", "Strict", "Upstream",
    "Variant", "config_id", "expand_sweeps", "manifest_dir", "manifest_json_schema", "path_problem",
    "point_id", "sweep_budget", "value_problems", "budget_fields", "without_branch",
]
