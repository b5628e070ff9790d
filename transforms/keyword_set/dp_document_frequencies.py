"""DPDocumentFrequencies: (user_id, term counts) -> a singleton NoisyDocumentFrequencies (Gaussian).

The exact vector (users per term bucket + the user count; dp_ops/tfidf.py for the sensitivity) is
summed by a global combine and meets the noise on one worker; only the noisy vector leaves this
transform.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np

from dp_ops.run_budget import RunBudget
from dp_ops.tfidf import DocumentFrequencyParams, NoisyDocumentFrequencies, add_gaussian_noise, document_vector_indices
from transforms.dp_stage import DPStage
from transforms.sum_arrays import SumArraysFn


class _CountUsersFn(SumArraysFn):
    """Users per bucket (and in all): a user adds 1 at each of their indices."""

    def __init__(self, buckets: int):
        super().__init__(buckets + 1, dtype=np.int64)

    def add_input(self, accumulator, indices):
        np.add.at(accumulator, indices, 1)
        return accumulator


def _add_noise(exact: np.ndarray, params: DocumentFrequencyParams) -> NoisyDocumentFrequencies:
    return NoisyDocumentFrequencies.from_noisy_vector(add_gaussian_noise(exact, params))


class DPDocumentFrequencies(DPStage):
    """`self.spend` is known, and registered with `budget`, at construction: the noise depends on the
    parameters only. Input: one (user_id, counts) per user (UserTermCounts)."""

    def __init__(self, params: DocumentFrequencyParams, budget: RunBudget | None):
        super().__init__(budget)
        self.params = params
        self._spends(params.spend())

    def expand(self, user_counts):
        buckets, terms_per_user = self.params.buckets, self.params.terms_per_user
        return (user_counts
                | "buckets each user adds to" >> beam.MapTuple(
                    lambda _, counts: document_vector_indices(counts, terms_per_user, buckets))
                | "count users per bucket" >> beam.CombineGlobally(_CountUsersFn(buckets))
                | "Gaussian noise" >> beam.Map(_add_noise, self.params))
