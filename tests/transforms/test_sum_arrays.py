import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that

from tests.conftest import checked, local_pipeline
from transforms.keyword_set.dp_document_frequencies import _CountUsersFn
from transforms.sum_arrays import SumArraysFn


def test_arrays_are_summed_element_wise_across_bundles():
    arrays = [np.full((2, 3), float(i)) for i in range(40)]

    def summed(totals):
        (released,) = totals
        np.testing.assert_array_equal(released, np.full((2, 3), float(sum(range(40)))))

    with local_pipeline() as pipeline:
        total = (pipeline | beam.Create(arrays) | beam.Reshuffle()
                 | beam.CombineGlobally(SumArraysFn((2, 3))).without_defaults())
        assert_that(total, checked(summed), label="total")


def test_no_input_sums_to_zeros_and_a_wrong_shape_is_refused():
    combine = SumArraysFn((2, 3), dtype=np.int64)
    empty = combine.extract_output(combine.merge_accumulators([combine.create_accumulator()]))
    assert empty.dtype == np.int64 and not empty.any() and empty.shape == (2, 3)
    with pytest.raises(ValueError, match="shape"):
        combine.add_input(combine.create_accumulator(), np.ones(3))  # would broadcast silently


def test_user_counts_add_one_at_each_index_and_merge_like_any_sum():
    combine = _CountUsersFn(buckets=4)
    first = combine.add_input(combine.create_accumulator(), np.array([0, 2, 4]))
    second = combine.add_input(combine.create_accumulator(), np.array([2, 4]))
    np.testing.assert_array_equal(combine.merge_accumulators([first, second]), [1, 0, 2, 0, 2])
