"""The SQL of the runs-jsonl import (``ingest.formats.runs_jsonl``): the query that proves
lines valid and types them, and the query that turns the valid lines into trials.

Kept apart from the importer so each reads on its own: the rules a line must meet are in
``runs_jsonl_row.RunLine`` (the row path's judge); here they are restated as checks on DuckDB
columns, conservatively (a line these checks cannot prove valid takes the row path).
"""

from __future__ import annotations

from contract.values import INT32_MAX

KNOWN_KEYS = ("model", "harness", "harness_version", "task_id", "trial", "status", "input_tokens",
              "output_tokens", "steps", "cost_usd", "repo", "benchmark", "system_id", "wall_seconds",
              "failure_mode", "started_at")
"""The fields of ``runs_jsonl_row.RunLine``, in order (a test holds the two equal)."""

# Checks on the raw JSON text ``r_<key>`` of one value (DuckDB's ``from_json`` to a JSON
# field re-serialises it: a string starts with a quote, a number is its shortest text).
# Each is a string comparison or a VARCHAR cast: the JSON is parsed once per line, never
# again per field.
_ABSENT = "(r_{k} IS NULL OR r_{k} = 'null')"
_STR = "starts_with(r_{k}, '\"')"
# a JSON integer: its text survives the round trip through BIGINT (no fraction or exponent)
_INT = "(r_{k} = CAST(TRY_CAST(r_{k} AS BIGINT) AS VARCHAR))"
_NUM = "(left(r_{k}, 1) BETWEEN '0' AND '9')"  # a JSON number that may be ≥ 0 (no sign)
# An ISO timestamp whose every field is in range (DuckDB's cast takes hour 24 and an offset
# of ±24:00, which Python refuses), years 1000-2999 (no overflow when moved to UTC).
_ISO = (r"^[12]\d{3}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?"
        r"(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$")
# Escapes that decode to a control character or half a surrogate pair: such lines take
# the row path, which judges them as it always did (raw control characters make the
# line invalid JSON for both parsers).
_UNUSUAL = r"\\u00[01][0-9a-fA-F]|\\u007[fF]|\\u[dD][89a-fA-F]"
# A comma before a closing brace or bracket: DuckDB's parser allows a trailing comma and
# Python's refuses it, so such lines (or a string that merely holds ", }") take the row path.
_TRAILING_COMMA = r",[ \t\n\r]*[}\]]"


def fast_sql(check_json: bool = True, source: str = "lines") -> str:
    """One query over ``lines(lineno, text)``: each line, whether it is provably valid
    (``fast``), and its typed values when it is. Each line is parsed twice, each a
    vectorised DuckDB call: its known fields (as raw JSON text) and its keys; every check
    after that is on the raw text of one field. ``check_json=False`` leaves out the JSON
    check (the query then fails on a line that is not JSON): every line of most files is,
    so ``load`` tries that first."""

    def f(template: str, key: str) -> str:
        return template.format(k=key)

    def opt(template: str, key: str) -> str:
        return f"({f(_ABSENT, key)} OR {f(template, key)})"

    def as_int(key: str) -> str:
        return f"TRY_CAST(r_{key} AS BIGINT)"

    def as_num(key: str) -> str:
        return f"TRY_CAST(r_{key} AS DOUBLE)"

    def text(key: str) -> str:
        return (f"CASE WHEN {f(_STR, key)} THEN CASE WHEN contains(r_{key}, '\\') "
                f"THEN json_extract_string(r_{key}, '$') ELSE r_{key}[2:-2] END END")

    checks = [
        f(_STR, "model"), f(_STR, "harness"), opt(_STR, "harness_version"),
        f"({f(_STR, 'task_id')} OR regexp_full_match(r_task_id, '-?[0-9]+'))",
        f(_INT, "trial"), f"{as_int('trial')} BETWEEN 0 AND {INT32_MAX}",
        "r_status IN ('\"solved\"', '\"failed\"', '\"infra_error\"')",
        *(f"({f(_ABSENT, k)} OR ({f(_INT, k)} AND {as_int(k)} >= 0))"
          for k in ("input_tokens", "output_tokens", "steps")),
        *(f"({f(_ABSENT, k)} OR ({f(_NUM, k)} AND isfinite({as_num(k)}) AND {as_num(k)} >= 0))"
          for k in ("cost_usd", "wall_seconds")),
        *(opt(_STR, k) for k in ("repo", "benchmark", "system_id", "failure_mode")),
        f"({f(_ABSENT, 'started_at')} OR (started_text IS NOT NULL AND "
        f"regexp_full_match(started_text, '{_ISO}') AND started IS NOT NULL))",
        # every key is a known one, none repeated: as many keys as known fields present
        "len(json_keys(text)) = " + " + ".join(f"(r_{k} IS NOT NULL)::INT" for k in KNOWN_KEYS),
    ]
    struct = "{" + ", ".join(f'"{k}": "JSON"' for k in KNOWN_KEYS) + "}"
    raw = ", ".join(f"CAST(j.{k} AS VARCHAR) AS r_{k}" for k in KNOWN_KEYS)
    return f"""
        WITH parsed AS (
            SELECT lineno, text, from_json(text, '{struct}') AS j FROM {source}
            WHERE starts_with(text, '{{') AND {"json_valid(text)" if check_json else "true"}
              AND NOT (contains(text, '\\u') AND regexp_matches(text, '{_UNUSUAL}'))
              AND NOT regexp_matches(text, '{_TRAILING_COMMA}')
        ), fields AS (
            SELECT lineno, text, {raw} FROM parsed
        ), timed AS (
            SELECT *, {text('started_at')} AS started_text,
                   TRY_CAST({text('started_at')} AS TIMESTAMPTZ) AS started
            FROM fields
        )
        SELECT lineno,
               coalesce({' AND '.join(f'coalesce({c}, false)' for c in checks)}, false) AS fast,
               {text('model')} AS model, {text('harness')} AS harness,
               {text('harness_version')} AS harness_version, {text('system_id')} AS system_id,
               coalesce({text('task_id')}, r_task_id) AS task,
               {as_int('trial')} AS trial, {text('status')} AS status,
               {as_int('input_tokens')} AS input_tokens, {as_int('output_tokens')} AS output_tokens,
               {as_int('steps')} AS steps, {as_num('cost_usd')} AS cost_reported,
               {text('repo')} AS repo, {text('benchmark')} AS benchmark,
               {as_num('wall_seconds')} AS wall_seconds, {text('failure_mode')} AS failure_mode,
               started AS started_at, false AS naive, NULL::VARCHAR AS extra_json
        FROM timed
    """  # noqa: S608 - built from this module's constants; values are parameters


MAP_CONFIGS = 256
"""Up to this many configurations (and one price per model), each trial finds its
configuration and prices in DuckDB maps, which keeps the trials in line order; else joins
do, and the trials are sorted after (DuckDB's joins do not keep the order)."""

LOOKUP = {
    "map": """
        rated AS (SELECT v.*, map_extract_value(getvariable('ip_map'), v.model) AS ip,
                         map_extract_value(getvariable('op_map'), v.model) AS op FROM valid v),
        priced AS ({priced}),
        configured AS (SELECT t.*, map_extract_value(getvariable('cid_map'), t.h) AS config_id,
                              map_extract_value(getvariable('variant_map'), t.h) AS variant FROM priced t)""",
    "join": """
        rated AS (SELECT v.*, p.ip, p.op FROM valid v
                  LEFT JOIN prices p ON p.model = v.model AND (
                      p.n = 1
                      OR (v.started_at IS NULL AND p.is_last)
                      OR (v.started_at IS NOT NULL AND p.eff_from <= CAST(v.started_at AS DATE)
                          AND (p.next_from IS NULL OR CAST(v.started_at AS DATE) < p.next_from)))),
        priced AS ({priced}),
        configured AS (SELECT t.*, c.config_id, c.variant FROM priced t
                       JOIN configs c ON c.model IS NOT DISTINCT FROM t.model AND c.harness IS NOT DISTINCT FROM t.harness
                        AND c.harness_version IS NOT DISTINCT FROM t.harness_version AND c.sys IS NOT DISTINCT FROM t.sys)""",
}

PRICED = """
        SELECT v.*, NULLIF(v.system_id, '') AS sys,
               hash(v.model, v.harness, v.harness_version, NULLIF(v.system_id, '')) AS h,
               CASE WHEN v.cost_reported IS NOT NULL THEN v.cost_reported
                    WHEN v.input_tokens IS NOT NULL AND v.output_tokens IS NOT NULL
                         AND v.ip IS NOT NULL AND v.op IS NOT NULL
                         AND isfinite((v.input_tokens * v.ip + v.output_tokens * v.op) / 1000000.0)
                    THEN (v.input_tokens * v.ip + v.output_tokens * v.op) / 1000000.0 END AS cost,
               CASE WHEN v.cost_reported IS NOT NULL THEN 'reported'
                    WHEN v.input_tokens IS NOT NULL AND v.output_tokens IS NOT NULL
                         AND v.ip IS NOT NULL AND v.op IS NOT NULL
                         AND isfinite((v.input_tokens * v.ip + v.output_tokens * v.op) / 1000000.0)
                    THEN 'priced' END AS cost_source
        FROM rated v"""

TRIALS_SQL = """
    WITH {lookup}
    SELECT t.config_id || ':' || t.task || ':' || CAST(t.trial AS VARCHAR) AS trial_id,
           $format AS source_format, t.config_id, t.variant, t.model, t.harness, t.harness_version,
           t.task AS case_id, CAST(t.trial AS INTEGER) AS repetition,
           CASE t.status WHEN 'solved' THEN 'accepted' WHEN 'failed' THEN 'target_failed'
                ELSE 'infra_error' END AS outcome,
           true AS complete, 1 AS attempts, 0 AS flags, false AS simulated,
           '{' || concat_ws(', ',
               CASE WHEN t.benchmark IS NOT NULL THEN '"benchmark": ' || to_json(t.benchmark) END,
               CASE WHEN t.cost IS NULL THEN '"cost_unpriced": true' END,
               CASE WHEN t.extra_json IS NOT NULL THEN '"extra": ' || t.extra_json END,
               '"line": ' || CAST(t.lineno AS VARCHAR),
               CASE WHEN t.naive THEN '"naive_timestamp": true' END,
               CASE WHEN t.repo IS NOT NULL THEN '"repository": ' || to_json(t.repo) END,
               CASE WHEN t.system_id IS NOT NULL THEN '"system_id": ' || to_json(t.system_id) END
           ) || '}' AS labels_json,
           'line:' || CAST(t.lineno AS VARCHAR) AS source_key,
           t.failure_mode AS reason, t.failure_mode, t.started_at,
           t.wall_seconds AS duration_s, t.wall_seconds AS agent_s,
           t.input_tokens, t.output_tokens, t.steps, t.cost AS cost_usd, t.cost_source,
           t.repo, t.benchmark, t.lineno
    FROM configured t
"""
