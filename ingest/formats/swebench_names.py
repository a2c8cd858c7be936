"""Harness and model of a SWE-bench submission, from its metadata or its folder name.

The public experiments repository keeps one folder per submission,
``evaluation/<split>/<YYYYMMDD>_<name>/``, with a ``metadata.yaml`` whose ``info.name`` is
a display name (``"mini-SWE-agent + Claude 3.7 Sonnet (20250219)"``) and whose
``tags.model`` lists model ids (``claude-3-7-sonnet-20250219``). Neither field says which
part of the name is the harness, and many folders have no metadata model at all, so
this module splits names by what models look like:

1. **metadata** (when given): the model is ``tags.model`` (several joined with ``+``,
   sorted); the harness is the part of ``info.name`` that does not look like a model
   (``" + "`` separates parts; a trailing parenthesis is a model, a date or a version);
   a name that is only a model (the bash-only leaderboard: ``"Claude 4 Opus (20250514)"``)
   takes its harness from the folder name.
2. **folder name**: after the date, ``_`` separates parts; the first part (after the
   first) that contains a model family (claude, gpt, o3, gemini, qwen, llama, …) starts
   the model, and following parts that continue it (``4``, ``sonnet``, ``70b``,
   ``flash``) belong to it; anything after is a qualifier. Without ``_`` the same is
   tried on ``-``-separated tokens (``sweagent-claude-3-7-20250219``).
3. A trailing version is split off the harness (``mini-v1.0.0`` → ``mini`` 1.0.0,
   ``SWE-agent 1.0``, ``Gru(2024-12-08)``), and well-known harness spellings get one
   canonical name (``sweagent`` and ``SWE-agent`` are both ``SWE-agent``; ``mini`` is
   ``mini-SWE-agent``), so the submissions of one harness count as one harness.

A name that cannot be split keeps what is known and says so in ``note`` (the importer
records it with the batch). Pure functions of strings and mappings: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_FAMILY = re.compile(
    r"(claude|sonnet|opus|haiku|chatgpt|gpt|gemini|llama|qwen|deepseek|mistral|mixtral|"
    r"devstral|codestral|kimi|glm|grok|nova|nemotron|minimax|granite|starcoder|"
    r"command-r|phi-\d|swe-?llama|skywork|lingma-swe|swe-agent-lm|openhands-lm)",
    re.IGNORECASE)
_O_SERIES = re.compile(r"^o[134](?:$|[-_.]|mini|pro|preview)", re.IGNORECASE)
_CONTINUES = re.compile(
    r"^(?:v?\d+(?:\.\d+)*[a-z]?|\d+b|sonnet|opus|haiku|flash|pro|mini|nano|max|turbo|"
    r"experimental|exp|preview|instruct|latest|thinking|high|low|medium|lite|coder|chat|"
    r"\d{4}-\d{2}-\d{2}|\d{8})$", re.IGNORECASE)
_VERSION = re.compile(
    r"(?:[\s_-]+|(?<=[a-z]))\(?v?(\d+(?:\.\d+)+|\d{8}(?:-dev)?|\d{4}-\d{2}-\d{2})\)?$",
    re.IGNORECASE)
_DATE = re.compile(r"^(\d{8})_(.+)$")
_PAREN = re.compile(r"^(.*?)\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)\s*$")

KNOWN_HARNESSES = {
    "sweagent": "SWE-agent", "minisweagent": "mini-SWE-agent", "mini": "mini-SWE-agent",
    "openhands": "OpenHands", "autocoderover": "AutoCodeRover", "moatless": "Moatless Tools",
    "moatlesstools": "Moatless Tools", "agentless": "Agentless", "rag": "RAG",
}
"""Spellings (lower case, letters and digits only) of harnesses with several submissions
→ one canonical name. Anything else keeps its own spelling (an aliases file can map it)."""


@dataclass(frozen=True)
class SubmissionName:
    """What a submission's name says about its configuration."""

    folder: str
    harness: str | None
    harness_version: str | None
    model: str | None
    date: str | None  # the folder's YYYYMMDD prefix
    source: str  # "metadata" or "folder"
    qualifier: str | None = None  # folder text after the model (e.g. "swe-search", "tts")
    note: str | None = None  # why a part is missing

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("folder", "harness", "harness_version", "model",
                                              "date", "source", "qualifier", "note")}


def looks_like_model(text: str) -> bool:
    """Whether ``text`` names a model (a model family anywhere, or an o-series token)."""
    return bool(_FAMILY.search(text)) or any(_O_SERIES.match(t) for t in re.split(r"[\s/]+", text))


def canonical_harness(name: str) -> str:
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    return KNOWN_HARNESSES.get(key, name)


def split_version(harness: str) -> tuple[str, str | None]:
    """``"mini-v1.0.0"`` → (``"mini"``, ``"1.0.0"``); no version → (harness, None)."""
    m = _VERSION.search(harness)
    if not m or m.start() == 0:
        return harness, None
    return harness[:m.start()].rstrip(" _-(") or harness, m.group(1)


def _model_span(parts: list[str]) -> tuple[int, int] | None:
    """[start, end) of the parts that make the model: the first part (not the first) with
    a model family, and the parts after it that continue a model name."""
    for i in range(1, len(parts)):
        if looks_like_model(parts[i]):
            j = i + 1
            while j < len(parts) and _CONTINUES.match(parts[j]):
                j += 1
            return i, j
    return None


def _harness(text: str) -> tuple[str | None, str | None]:
    if not text:
        return None, None
    base, version = split_version(text)
    return canonical_harness(base), version


def parse_folder(folder: str) -> SubmissionName:
    """Split a submission folder name (``20250219_mini-SWE-agent_claude-3-7-sonnet``)."""
    m = _DATE.match(folder)
    date, rest = (m.group(1), m.group(2)) if m else (None, folder)
    for sep in ("_", "-"):
        parts = rest.split(sep)
        span = _model_span(parts)
        if span:
            # with "-" as the separator a model's own dashes are indistinguishable from
            # the separator, so everything after the model's start is the model
            i, j = span if sep == "_" else (span[0], len(parts))
            harness, version = _harness(sep.join(parts[:i]))
            return SubmissionName(folder, harness, version, sep.join(parts[i:j]), date,
                                  "folder", sep.join(parts[j:]) or None)
    if looks_like_model(rest.split("_")[0].split("-")[0]) or _O_SERIES.match(rest):
        return SubmissionName(folder, None, None, rest, date, "folder",
                              note=f"{folder}: the name is a model only; no harness in it")
    parts = rest.split("_")
    if len(parts) == 2 and canonical_harness(parts[0]) != parts[0]:
        harness, version = _harness(parts[0])
        return SubmissionName(folder, harness, version, parts[1], date, "folder")
    harness, version = _harness(rest)
    return SubmissionName(folder, harness, version, None, date, "folder",
                          note=f"{folder}: no model found in the name (it names no known "
                               "model family); give the model in metadata.yaml or an "
                               "aliases file")


def _top_level_split(name: str) -> list[str]:
    """Split on " + " outside parentheses."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(name):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and name.startswith(" + ", i):
            out.append(name[start:i])
            start = i + 3
    out.append(name[start:])
    return [p.strip() for p in out if p.strip()]


def _peel(seg: str) -> tuple[str, list[str]]:
    """``"SWE-RL (A + B) (20250226)"`` → (``"SWE-RL"``, [``"A + B"``, ``"20250226"``])."""
    parens: list[str] = []
    while (m := _PAREN.match(seg)) and m.group(1).strip():
        parens.insert(0, m.group(2).strip())
        seg = m.group(1).strip()
    return seg, parens


def _name_parts(name: str) -> tuple[list[str], list[str], str | None]:
    """Display name → (harness parts, model parts, version)."""
    harness, models, version = [], [], None
    for seg in _top_level_split(name):
        head, parens = _peel(seg)
        if looks_like_model(head):
            models.append(seg)
            continue
        harness.append(head)
        for paren in parens:
            if looks_like_model(paren):
                models.append(paren)
            elif split_version(f"x {paren}")[1]:
                version = split_version(f"x {paren}")[1]
    return harness, models, version


def metadata_models(meta: Mapping[str, Any]) -> list[str]:
    tags = meta.get("tags") if isinstance(meta.get("tags"), Mapping) else {}
    raw = (tags or {}).get("model") or meta.get("model") or []
    models = [raw] if isinstance(raw, str) else [str(m) for m in raw if m]
    return sorted(dict.fromkeys(models))


def parse(folder: str, metadata: Mapping[str, Any] | None = None) -> SubmissionName:
    """Harness, version and model of a submission: from ``metadata`` (the parsed
    metadata.yaml) where it says them, else from the folder name."""
    from_folder = parse_folder(folder)
    if not metadata:
        return from_folder
    info = metadata.get("info") if isinstance(metadata.get("info"), Mapping) else {}
    name = str((info or {}).get("name") or metadata.get("name") or "").strip()
    models = metadata_models(metadata)
    harness_parts, model_parts, version = _name_parts(name) if name else ([], [], None)
    notes = []
    if harness_parts:
        base, v = split_version(" + ".join(harness_parts))
        harness: str | None = canonical_harness(base)
        version = version or v
    else:
        harness = from_folder.harness
        version = version or from_folder.harness_version
        if name:
            notes.append(f"{folder}: the display name {name!r} names no harness; harness from "
                         "the folder name")
    model = "+".join(models) if models else (
        " + ".join(model_parts) if model_parts else from_folder.model)
    if harness is None:
        notes.append(from_folder.note or f"{folder}: no harness in the name")
    if model is None:
        notes.append(f"{folder}: no model in metadata.yaml (tags.model) or the name")
    if harness_parts and version is None:
        version = from_folder.harness_version
    return SubmissionName(folder, harness, version, model, from_folder.date, "metadata",
                          from_folder.qualifier, "; ".join(notes) or None)
