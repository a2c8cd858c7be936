"""The value rules of ``contract.values`` as constrained pydantic types, for the event models and
the manifest (kept apart so that a reader checking an id never imports pydantic)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, StringConstraints

from contract.values import (
    ID_MAX,
    ID_PATTERN,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    TRIAL_ID_MAX,
    check_settings,
)

Int32 = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]
"""An integer that fits a Parquet int32 column (exit codes, signals)."""
Count32 = Annotated[int, Field(ge=0, le=INT32_MAX)]
Positive32 = Annotated[int, Field(ge=1, le=INT32_MAX)]
"""Attempts, repetitions: counted from 1, stored as int32."""
Int64 = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]
Count64 = Annotated[int, Field(ge=0, le=INT64_MAX)]
"""Tokens, steps, seq: ≥ 0 and within a Parquet int64 column."""
Id = Annotated[str, StringConstraints(pattern=ID_PATTERN, max_length=ID_MAX)]
TrialId = Annotated[str, StringConstraints(pattern=ID_PATTERN, max_length=TRIAL_ID_MAX)]

Settings = Annotated[dict[str, Any], AfterValidator(check_settings)]
"""Free-form JSON held to ``json_problem``; ``ingest.fastdecode`` runs the same function after
decoding."""
