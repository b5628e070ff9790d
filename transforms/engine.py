"""Where the job's stages run: on Beam (the job), or in this process on plain values (the in-process
evaluation's hundreds of runs, eval/urania_inprocess.py).

PipelineDP runs one DPEngine over a LocalBackend or a BeamBackend. The job's stages do the same, one
level up: a stage is one PTransform whose `expand` is its Beam form and whose `local(main)` is its
in-process form, and the stages are wired once (transforms/topic_stages.py) against an engine. The
stage's constructor takes what it reads besides its main input: PCollections (side inputs) on Beam,
their values in-process.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import apache_beam as beam


@dataclasses.dataclass(frozen=True)
class WithPrivate:
    """A local form's output and its private by-products (the exemplar evolutions): the evaluation
    reads them, the job never releases them."""

    value: Any
    private: dict


class BeamEngine:
    """Applies each stage to its PCollection: `main | label >> stage`."""

    def apply(self, label: str, stage, main):
        return main | label >> stage


class LocalEngine:
    """Runs each stage's in-process form on plain values; `private` collects their private by-products."""

    def __init__(self):
        self.private: dict = {}

    def apply(self, label: str, stage, main):
        result = stage.local(main)
        if isinstance(result, WithPrivate):
            self.private.update(result.private)
            return result.value
        return result


class MapValues(beam.PTransform):
    """A stage that maps each (key, value) pair's value: Beam's MapTuple; in-process, a dict comprehension."""

    def __init__(self, fn):
        super().__init__()
        self._fn = fn

    def local(self, pairs: dict) -> dict:
        return {key: self._fn(value) for key, value in pairs.items()}

    def expand(self, pairs):
        fn = self._fn
        return pairs | "map values" >> beam.MapTuple(lambda key, value: (key, fn(value)))
