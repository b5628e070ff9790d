"""The public keyword set K: loading and validating it.

A keyword set file is either plain text (one keyword per line, '#' comments) or JSON
{"keywords": [...], "method": ..., "privacy": {...}} as written by keyword-set builders; a DP-built
set carries the privacy it spent, which the main job adds to its report.
"""

from __future__ import annotations

import dataclasses
import json
import os

from apache_beam.io.filesystems import FileSystems

from dp_ops.spend import MechanismSpend

DEFAULT_KEYWORD_SET = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                   "beam_jobs", "resources", "default_keywords.txt")
MAX_KEYWORD_CHARS = 60


@dataclasses.dataclass(frozen=True)
class KeywordSet:
    keywords: tuple[str, ...]
    source: str
    method: str = "bundled public list"
    spend: tuple[MechanismSpend, ...] = ()


def _clean(keywords: list[str], source: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for keyword in keywords:
        if not isinstance(keyword, str):
            raise ValueError(f"{source}: keywords must be strings, got {keyword!r}")
        normalised = " ".join(keyword.lower().split())
        if not normalised:
            continue
        if len(normalised) > MAX_KEYWORD_CHARS:
            raise ValueError(f"{source}: keyword longer than {MAX_KEYWORD_CHARS} characters: {normalised[:80]!r}")
        seen.setdefault(normalised)
    if not seen:
        raise ValueError(f"{source}: the keyword set is empty")
    return tuple(seen)


def load_keyword_set(path: str | None = None) -> KeywordSet:
    """Reads K from a local path or any Beam filesystem (gs://...)."""
    path = path or DEFAULT_KEYWORD_SET
    try:
        with FileSystems.open(path) as handle:
            text = handle.read().decode("utf-8")
    except Exception as error:
        raise ValueError(f"cannot read keyword set {path}: {error}") from error
    if text.lstrip().startswith("{"):
        data = json.loads(text)
        spend = tuple(MechanismSpend.from_json(s) for s in data.get("privacy", {}).get("mechanisms", []))
        return KeywordSet(_clean(data["keywords"], path), path, data.get("method", "unknown"), spend)
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return KeywordSet(_clean(lines, path), path)
