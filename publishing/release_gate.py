"""The release gate: scans what a run is about to publish for PII-like text and planted canaries.

Every released string should come from the public keyword set or a template, so an email address,
a phone number or a planted canary in it means something leaked. Only string values of JSON files
are scanned (noisy counts and epsilons are numbers and would look like phone numbers); other files
are scanned as text.
"""

from __future__ import annotations

import dataclasses
import json

from core.pii_patterns import PII_PATTERNS


@dataclasses.dataclass(frozen=True)
class Finding:
    path: str
    kind: str
    text: str


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def released_strings(path: str, content: bytes) -> list[str]:
    text = content.decode("utf-8", errors="replace")
    if path.endswith(".json"):
        try:
            return list(_strings(json.loads(text)))
        except ValueError:
            pass
    return [text]


def scan(path: str, content: bytes, canaries: tuple[str, ...] = ()) -> list[Finding]:
    findings = []
    lowered_canaries = [c.lower() for c in canaries if c.strip()]
    for text in released_strings(path, content):
        for kind, pattern in PII_PATTERNS.items():
            findings += [Finding(path, kind, match.group(0)) for match in pattern.finditer(text)]
        lowered = text.lower()
        findings += [Finding(path, "canary", canary) for canary in lowered_canaries if canary in lowered]
    return findings


def _canary_of_line(line: str) -> str:
    # A JSON object line with a "canary" field (eval.audit.canary_generator's canaries.jsonl); else the line.
    if line.startswith("{"):
        try:
            record = json.loads(line)
        except ValueError:
            return line
        if isinstance(record, dict) and isinstance(record.get("canary"), str):
            return record["canary"].strip()
    return line


def load_canaries(path: str | None) -> tuple[str, ...]:
    """Operator-planted secrets that must never be released: one canary string per line, or JSON
    Lines of objects with a "canary" field."""
    if not path:
        return ()
    from apache_beam.io.filesystems import FileSystems
    with FileSystems.open(path) as handle:
        lines = (line.strip() for line in handle.read().decode("utf-8").splitlines())
        return tuple(canary for canary in (_canary_of_line(line) for line in lines if line) if canary)
