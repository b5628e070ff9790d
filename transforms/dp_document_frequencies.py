"""DPDocumentFrequencies: ClippedTerms -> a singleton NoisyDocumentFrequencies (discrete Laplace).

The exact vector (documents per term bucket + the document count) is summed by a global combine and
meets the noise on one worker; only the noisy vector leaves this transform.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np

from dp_ops import discrete_laplace
from dp_ops.run_budget import RunBudget
from dp_ops.tfidf import DocumentFrequencyParams, NoisyDocumentFrequencies, document_vector_indices
from transforms.dp_stage import DPStage
from transforms.sum_arrays import SumArraysFn


class _CountDocumentsFn(SumArraysFn):
    """Documents per bucket (and in all): a conversation adds 1 at each of its indices."""

    def __init__(self, buckets: int):
        super().__init__(buckets + 1, dtype=np.int64)

    def add_input(self, accumulator, indices):
        np.add.at(accumulator, indices, 1)
        return accumulator


def _add_noise(exact: np.ndarray, scale: float) -> NoisyDocumentFrequencies:
    return NoisyDocumentFrequencies.from_noisy_vector(exact + discrete_laplace.sample(exact.shape, scale))


class DPDocumentFrequencies(DPStage):
    """`self.spend` is known, and registered with `budget`, at construction: the noise depends on the
    parameters only."""

    def __init__(self, params: DocumentFrequencyParams, budget: RunBudget | None):
        super().__init__(budget)
        self.params = params
        self._spends(params.spend())

    def expand(self, clipped_terms):
        buckets = self.params.buckets
        return (clipped_terms
                | "buckets each conversation adds to" >> beam.Map(lambda c: document_vector_indices(c.counts, buckets))
                | "count documents per bucket" >> beam.CombineGlobally(_CountDocumentsFn(buckets))
                | "discrete Laplace noise" >> beam.Map(_add_noise, self.params.scale))
