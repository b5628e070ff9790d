"""Beam counters for model calls, one namespace per step (llm_facets, llm_keywords, llm_names, ...).

`record` runs in the DoFn's own thread (Beam's metrics container is per thread). The counters are
copied into private/run_stats.json under "llm" by the job (beam_jobs/insights.py).
"""

from __future__ import annotations

import collections

from apache_beam.metrics import Metrics

NAMESPACE_PREFIX = "llm_"
COUNTS = ("calls", "requests", "retries", "failures", "fallbacks", "cache_hits", "repaired",
          "prompt_tokens", "completion_tokens")


def tally(results, fallback: bool = True) -> collections.Counter:
    """fallback: whether a failed call is answered by the step's offline fallback (names, exemplars, the
    keyword-set refiner); the steps on records' text have none (a failed record is dead-lettered)."""
    counts = collections.Counter({name: 0 for name in COUNTS})
    for result in results:
        if result.cache_hit:
            counts["cache_hits"] += 1
        else:
            counts["calls"] += 1
        counts["requests"] += result.requests
        counts["retries"] += result.retries
        counts["failures"] += 0 if result.ok else 1
        counts["fallbacks"] += 0 if result.ok or not fallback else 1
        counts["repaired"] += 1 if result.ok and result.repaired else 0
        counts["prompt_tokens"] += result.prompt_tokens
        counts["completion_tokens"] += result.completion_tokens
    return counts


class StepCounters:
    """Beam counters of one step; also keeps the totals for callers that run outside Beam."""

    def __init__(self, step: str):
        self.step = step
        self.totals = collections.Counter({name: 0 for name in COUNTS})

    def record(self, results, fallback: bool = True) -> None:
        counts = tally(results, fallback)
        self.totals.update(counts)
        for name, value in counts.items():
            if value:
                Metrics.counter(NAMESPACE_PREFIX + self.step, name).inc(value)


def llm_counts(counters) -> dict:
    """{"facets": {...}, ..., "total": {...}} from a runner's counter query results."""
    by_step: dict[str, collections.Counter] = {}
    for counter in counters:
        namespace = counter.key.metric.namespace
        if namespace.startswith(NAMESPACE_PREFIX):
            step = namespace[len(NAMESPACE_PREFIX):]
            by_step.setdefault(step, collections.Counter())[counter.key.metric.name] += counter.committed
    if not by_step:
        return {}
    total = collections.Counter({name: 0 for name in COUNTS})
    for counts in by_step.values():
        total.update(counts)
    out = {step: {name: int(counts.get(name, 0)) for name in COUNTS} for step, counts in sorted(by_step.items())}
    out["total"] = {name: int(total.get(name, 0)) for name in COUNTS}
    return out


class LiveCalls:
    """Model calls submitted and answered so far in this process, per step, for the progress line of a
    local run (beam_jobs/progress.py): Beam counters are only reported when a stage finishes, and a
    facet batch or a keyword block can take minutes of model calls. Counts only, thread-safe."""

    def __init__(self, clock=None):
        import threading
        import time
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._steps: dict[str, dict] = {}

    def reset(self) -> None:
        with self._lock:
            self._steps.clear()

    def submitted(self, step: str, calls: int) -> None:
        with self._lock:
            entry = self._steps.setdefault(step, {"submitted": 0, "done": 0, "first": self._clock(), "last": None})
            entry["submitted"] += calls

    def done(self, step: str) -> None:
        with self._lock:
            entry = self._steps[step]
            entry["done"] += 1
            entry["last"] = self._clock()

    def snapshot(self) -> dict[str, dict]:
        """{step: {"submitted", "done", "first": first submission, "last": last answer (or None)}}."""
        with self._lock:
            return {step: dict(entry) for step, entry in self._steps.items()}


live_calls = LiveCalls()
