"""SumArraysFn: the element-wise sum of equally shaped numpy arrays, as a Beam CombineFn.

Every stage that totals arrays across workers uses it (DP k-means' per-release sums, the DP
document frequencies, the embedding benchmark's checksum), so the exact total that meets the
noise is computed one way.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np


class SumArraysFn(beam.CombineFn):
    """Element-wise sum of arrays of `shape` (added in `dtype`); zeros for an empty input.

    A subclass may take another input form by overriding `add_input` only (e.g. indices to add 1 at).
    """

    def __init__(self, shape: tuple[int, ...] | int, dtype=np.float64):
        self._shape = shape
        self._dtype = np.dtype(dtype)

    def create_accumulator(self):
        return np.zeros(self._shape, dtype=self._dtype)

    def add_input(self, accumulator, array):
        if np.shape(array) != accumulator.shape:
            raise ValueError(f"cannot add an array of shape {np.shape(array)} to a sum of shape {accumulator.shape}")
        accumulator += array
        return accumulator

    def merge_accumulators(self, accumulators):
        accumulators = iter(accumulators)
        total = np.array(next(accumulators), dtype=self._dtype)
        for accumulator in accumulators:
            total += accumulator
        return total

    def extract_output(self, accumulator):
        return accumulator
