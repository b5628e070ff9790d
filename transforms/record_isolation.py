"""Per-record isolation for the steps that work on batches of records (facets, embedding, keyword
selection): whatever one record holds, it can fail only itself.

User-level DP assumes that a user's records change only that user's contribution. A batched step
that raised for one record would otherwise fail its whole batch (and then the job), and whether
anything is released would depend on one user. So a batch that raises is run again one record at a
time, and a record that fails alone leaves as a DeadLetter with the stage and the error. Every
batched step computes each item independently of its neighbours (tested for the embedding
backends), so the records that succeed get the same result as in the batch.

Failures of a step's set-up (a model that does not load) are not caught here: they are not a
record's doing, and they still fail the job.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TypeVar

import apache_beam as beam
from apache_beam.metrics import Metrics

from core.records import DeadLetter

Item = TypeVar("Item")
Result = TypeVar("Result")


def run_isolated(run_batch: Callable[[list[Item]], Sequence[Result]], items: list[Item]
                 ) -> list[tuple[Result | None, Exception | None]]:
    """(result, None) or (None, error) for each item, in order."""
    try:
        results = list(run_batch(items))
        if len(results) != len(items):
            raise RuntimeError(f"the step returned {len(results)} results for {len(items)} records")
        return [(result, None) for result in results]
    except Exception as error:
        if len(items) == 1:
            return [(None, error)]
    outcomes: list[tuple[Result | None, Exception | None]] = []
    for item in items:
        try:
            (result,) = run_batch([item])
            outcomes.append((result, None))
        except Exception as error:
            outcomes.append((None, error))
    return outcomes


def stage_dead_letter(stage: str, reason: str, conversation_id: str, problem: Exception | str) -> DeadLetter:
    """A record dropped by a per-record step after validation, named by its conversation id."""
    detail = problem if isinstance(problem, str) else f"{type(problem).__name__}: {str(problem)[:300]}"
    Metrics.counter("dead_letter", reason).inc()
    return DeadLetter(source="", line=None, reason=reason, detail=detail, raw="", stage=stage,
                      conversation_id=conversation_id)


@dataclasses.dataclass(frozen=True)
class StageOutput:
    """What a per-record step passes on, and the records it dead-lettered."""

    output: beam.PCollection
    dead_letter: beam.PCollection


def split_dead_letters(mixed: beam.PCollection) -> StageOutput:
    """Separates DeadLetters from a step's other elements. (Two filters rather than a multi-output
    ParDo: Beam 2.77's DaskRunner sends every element to every tag.)"""
    return StageOutput(
        output=mixed | "passed on" >> beam.Filter(lambda element: not isinstance(element, DeadLetter)),
        dead_letter=mixed | "dead-lettered" >> beam.Filter(lambda element: isinstance(element, DeadLetter)),
    )
