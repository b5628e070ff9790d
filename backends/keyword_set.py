"""The public keyword set K: loading and validating it.

A keyword set file is either plain text (one keyword per line, '#' comments) or JSON as written by
`beam_jobs.build_keywords` (format version 1):

    {"format": "urania-keyword-set", "version": 1, "created_at": "2026-11-22T03:00:00+00:00",
     "method": "tfidf", "params": {...}, "source": {...}, "keywords": [...],
     "privacy": {"epsilon": ..., "delta": ..., "mechanisms": [MechanismSpend, ...]}}

A DP-built set carries the privacy it spent, which the main job adds to its report. Older JSON
without "version" (just "keywords", "method", "privacy") still loads; a newer version is refused.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os

from apache_beam.io.filesystems import FileSystems

from dp_ops.spend import MechanismSpend

DEFAULT_KEYWORD_SET = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                   "beam_jobs", "resources", "default_keywords.txt")
MAX_KEYWORD_CHARS = 60
FORMAT_NAME = "urania-keyword-set"
FORMAT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class KeywordSet:
    keywords: tuple[str, ...]
    source: str
    method: str = "bundled public list"
    spend: tuple[MechanismSpend, ...] = ()
    version: int | None = None
    created_at: str | None = None
    params: dict = dataclasses.field(default_factory=dict)
    origin: dict = dataclasses.field(default_factory=dict)


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
        return _from_json(json.loads(text), path)
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return KeywordSet(_clean(lines, path), path)


def _from_json(data: dict, path: str) -> KeywordSet:
    version = data.get("version")
    if version is not None and (not isinstance(version, int) or version > FORMAT_VERSION):
        raise ValueError(f"{path}: keyword-set format version {version!r} is newer than this job reads "
                         f"({FORMAT_VERSION}); upgrade urania-beam")
    if "keywords" not in data:
        raise ValueError(f"{path}: a JSON keyword set needs a \"keywords\" list")
    spend = tuple(MechanismSpend.from_json(s) for s in data.get("privacy", {}).get("mechanisms", []))
    return KeywordSet(_clean(data["keywords"], path), path, data.get("method", "unknown"), spend,
                      version=version, created_at=data.get("created_at"), params=data.get("params", {}),
                      origin=data.get("source", {}))


def keyword_set_document(keywords: list[str], method: str, params: dict, source: dict,
                         spend: list[MechanismSpend], created_at: str | None = None) -> dict:
    """The version-1 JSON document for a built keyword set (keywords cleaned as the loader does)."""
    epsilon = sum(s.epsilon for s in spend)
    delta = sum(s.delta for s in spend)
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "created_at": created_at or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "method": method,
        "params": params,
        "source": source,
        "keywords": list(_clean(keywords, f"{method} keyword set")),
        "privacy": {"unit": "user", "composition": "basic", "epsilon": epsilon, "delta": delta,
                    "mechanisms": [s.to_json() for s in spend]},
    }


def write_keyword_set(path: str, document: dict) -> None:
    """Writes a keyword-set document to a local path or any Beam filesystem (gs://...)."""
    with FileSystems.create(path) as handle:
        handle.write(json.dumps(document, indent=2, ensure_ascii=False).encode("utf-8"))
