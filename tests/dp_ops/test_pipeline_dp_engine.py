"""The one PipelineDP setup every PipelineDP stage and the evaluation use (dp_ops.pipeline_dp_engine)."""

import apache_beam as beam
import numpy as np
import pipeline_dp
import pytest
from apache_beam.testing.util import assert_that

from dp_ops import dp_counts, partition_selection
from dp_ops.dp_counts import DPCountParams
from dp_ops.partition_selection import TermSelectionParams
from dp_ops.pipeline_dp_engine import release_with_pipeline_dp
from tests.conftest import checked, local_pipeline
from transforms.dp_count import DPCountPerPartition


def _count_params():
    return DPCountParams(stage="cluster_sizes", epsilon=1.0, max_contributions=2)


def test_local_backend_counts_every_public_partition_with_the_noise_it_reports():
    pairs = [(f"u{p}-{i}", p) for p in range(1500) for i in range(10)] + [("u", "not public")]
    params = _count_params()
    released, spend = release_with_pipeline_dp(pairs, pipeline_dp.LocalBackend(), params, params.aggregate_params(),
                                               dp_counts.spend_from_accountant, "COUNT", public_partitions=range(1500))
    counts = {partition: metrics.count for partition, metrics in released}
    assert sorted(counts) == list(range(1500))
    errors = np.array([counts[p] - 10 for p in range(1500)])
    assert spend.epsilon == pytest.approx(1.0) and spend.noise == {"kind": "laplace", "scale": 2.0,
                                                                    "std": pytest.approx(2 ** 1.5)}
    assert errors.std() == pytest.approx(spend.noise["std"], rel=0.12)


def test_the_beam_stage_reports_the_spend_the_local_backend_does():
    params = _count_params()
    stage = DPCountPerPartition(params, [0, 1], "COUNT", None)

    def both_partitions(counts):
        assert len(counts) == 2

    with local_pipeline() as pipeline:
        assert_that(pipeline | beam.Create([("u", 0)]) | stage, checked(both_partitions), label="counts")
    _, local = release_with_pipeline_dp([("u", 0)], pipeline_dp.LocalBackend(), params, params.aggregate_params(),
                                        dp_counts.spend_from_accountant, "COUNT", public_partitions=[0, 1])
    assert stage.spend == local


def test_selection_keeps_a_common_term_drops_a_single_users_and_takes_no_public_partitions():
    params = TermSelectionParams(stage="keyword_set", epsilon=1.0, delta=1e-6, max_partitions_per_user=1)
    pairs = [(f"u{i}", "common") for i in range(400)] + [("one", "rare")] * 50
    released, spend = release_with_pipeline_dp(pairs, pipeline_dp.LocalBackend(), params, params.select_params(),
                                               partition_selection.spend_from_accountant, "selection")
    assert list(released) == ["common"]
    assert spend.epsilon == pytest.approx(1.0) and spend.delta == pytest.approx(1e-6)
    with pytest.raises(ValueError, match="public_partitions"):
        release_with_pipeline_dp(pairs, pipeline_dp.LocalBackend(), params, params.select_params(),
                                 partition_selection.spend_from_accountant, "selection", public_partitions=["common"])
