"""Per-stage Beam metrics: processing time in microseconds (summed over workers, copied into
private/run_stats.json) and calls, visible in Dataflow's monitoring as well."""

from __future__ import annotations

import functools
import time

from apache_beam.metrics import Metrics

from transforms import progress

NAMESPACE = "stage_micros"


def timed(stage: str, fn):
    """Wraps a Map/FlatMap function so its processing time counts towards `stage`."""
    counter = Metrics.counter(NAMESPACE, stage)
    elements = Metrics.counter("stage_elements", stage)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        elements.inc()
        try:
            result = fn(*args, **kwargs)
            if hasattr(result, "__next__"):  # a FlatMap generator: time its consumption too
                result = list(result)
            return result
        finally:
            seconds = time.perf_counter() - started
            counter.inc(int(seconds * 1e6))
            progress.advance(stage, 1, seconds)

    return wrapper
