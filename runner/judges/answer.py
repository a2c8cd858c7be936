"""The judge's answer: one JSON object in a documented shape; anything else is inconclusive.

Shape (docs/judges.md)::

    {"verdict": "pass" | "fail" | "inconclusive", "reasons": ["...", ...]}

``failure_category`` (one of ``contract.stage_events.FailureCategory``) may come with ``fail``.
``edited_files`` (a list) may be present and must be empty: a judge works on a read-only
copy, so an answer claiming edits is not trusted. One surrounding Markdown code fence is
tolerated (models add them); any other text, a missing field or an unknown one makes
the judgment ``inconclusive`` with the reason, never a guess.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contract.stage_events import FailureCategory

MAX_REASONS = 20
MAX_REASON_CHARS = 2000
VERDICTS = {"pass": "passed", "fail": "failed", "inconclusive": "inconclusive"}


class JudgeAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Literal["pass", "fail", "inconclusive"]
    reasons: list[str] = Field(min_length=1, max_length=MAX_REASONS)
    edited_files: list[str] = Field(default_factory=list)
    failure_category: FailureCategory | None = None
    """Optional with ``fail``: the first decisive wrong choice."""


@dataclass(frozen=True)
class Parsed:
    verdict: str
    """passed | failed | inconclusive (the events' Verdict)."""
    reasons: list[str]
    error: str | None = None
    failure_category: str | None = None

    @property
    def abstained(self) -> bool:
        return self.verdict == "inconclusive"


_FENCE = re.compile(r"\A```(?:json)?\s*\n(.*)\n```\s*\Z", re.S)


def parse_answer(text: str | None) -> Parsed:
    """The judgment an answer text gives; malformed → inconclusive with ``error``."""
    if text is None or not text.strip():
        return Parsed("inconclusive", [], "the judge gave no answer")
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        doc = json.loads(body)
    except ValueError:
        return Parsed("inconclusive", [], f"the answer is not JSON: {text.strip()[:200]!r}")
    try:
        answer = JudgeAnswer.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "answer"
        return Parsed("inconclusive", [], f"the answer is not in the judge shape ({where}: {first['msg']})")
    reasons = [r[:MAX_REASON_CHARS] for r in answer.reasons]
    if answer.edited_files:
        return Parsed("inconclusive", reasons,
                      f"the judge claims to have edited files ({', '.join(answer.edited_files[:5])}); "
                      "judges work on a read-only copy, so the answer is not trusted")
    if answer.failure_category is not None and answer.verdict != "fail":
        return Parsed("inconclusive", reasons, "failure_category: only with verdict fail")
    return Parsed(VERDICTS[answer.verdict], reasons, failure_category=answer.failure_category)
