"""An in-process progress registry: how many elements each stage has handled in this process.

Only for watching a local run (beam_jobs/progress.py prints it): the DirectRunner's in-process
engine runs every DoFn in the launcher's process, so the stages' own counters are visible here
while the pipeline runs (Beam's metrics are only reported when a stage finishes). Disabled by
default, so on Dataflow workers every call is a no-op. It counts; it never sees conversation text,
and nothing in it feeds a DP aggregate.
"""

from __future__ import annotations

import threading
from collections import Counter

_lock = threading.Lock()
_enabled = False
_counts: Counter = Counter()
_seconds: Counter = Counter()
_records_per_user: Counter = Counter()


def enable() -> None:
    """Starts counting from zero (one run at a time per process)."""
    global _enabled
    with _lock:
        _counts.clear()
        _seconds.clear()
        _records_per_user.clear()
        _enabled = True


def disable() -> None:
    global _enabled
    with _lock:
        _enabled = False
        _records_per_user.clear()


def advance(stage: str, amount: int = 1, seconds: float = 0.0) -> None:
    """`amount` more elements done by `stage`, taking `seconds` of processing time."""
    if _enabled:
        with _lock:
            _counts[stage] += amount
            _seconds[stage] += seconds


def note_valid_record(user_id: str) -> None:
    """A valid record was read: lets the reporter know how many conversations bounding will keep."""
    if _enabled:
        with _lock:
            _records_per_user[user_id] += 1


def snapshot(max_conversations_per_user: int) -> tuple[dict[str, int], dict[str, float], int, int]:
    """(elements per stage, processing seconds per stage, users with a valid record, conversations
    contribution bounding keeps)."""
    with _lock:
        kept = sum(min(n, max_conversations_per_user) for n in _records_per_user.values())
        return dict(_counts), dict(_seconds), len(_records_per_user), kept
