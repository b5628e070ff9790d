"""The one PipelineDP setup every PipelineDP stage and the evaluation use (dp_ops.pipeline_dp_engine)."""

import apache_beam as beam
import numpy as np
import pipeline_dp
import pytest
from apache_beam.testing.util import assert_that

from dp_ops import dp_counts, partition_selection
from dp_ops.dp_counts import DPCountParams
from dp_ops.partition_selection import TermSelectionParams
from dp_ops.pipeline_dp_engine import pipeline_dp_spend, release_with_pipeline_dp
from dp_ops.run_budget import RunBudget
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
    constructed = stage.spend

    def both_partitions(counts):
        assert len(counts) == 2

    with local_pipeline() as pipeline:
        assert_that(pipeline | beam.Create([("u", 0)]) | stage, checked(both_partitions), label="counts")
    _, local = release_with_pipeline_dp([("u", 0)], pipeline_dp.LocalBackend(), params, params.aggregate_params(),
                                        dp_counts.spend_from_accountant, "COUNT", public_partitions=[0, 1])
    assert stage.spend == local == constructed


def test_a_stage_knows_its_spend_at_construction_registers_it_when_applied_and_refuses_another():
    params = _count_params()
    budget = RunBudget(1e-6)
    stage = DPCountPerPartition(params, [0, 1], "COUNT", budget)
    assert stage.spend.epsilon == pytest.approx(1.0) and stage.spend.noise["scale"] == 2.0
    assert budget.entries == ()  # nothing released yet, nothing registered
    stage.local([("u", 0), ("u", 1)])
    assert [(e.stage, e.mechanism, e.epsilon) for e in budget.entries] == [
        ("cluster_sizes", "COUNT (in-process)", stage.spend.epsilon)]
    with pytest.raises(RuntimeError, match="applied once"):
        stage.local([("u", 0)])

    # a release whose accountant gives another budget than the one its stage was built with is refused
    other = DPCountParams(stage="cluster_sizes", epsilon=0.5, max_contributions=2)
    expected = pipeline_dp_spend(params, params.aggregate_params(), dp_counts.spend_from_accountant, "COUNT",
                                 public_partitions=True)
    with pytest.raises(RuntimeError, match="not the"):
        release_with_pipeline_dp([("u", 0)], pipeline_dp.LocalBackend(), other, other.aggregate_params(),
                                 dp_counts.spend_from_accountant, "COUNT", public_partitions=[0, 1], expected=expected)
    # partition selection too: its spend (epsilon and delta) is known before any data
    selection = TermSelectionParams(stage="keyword_set", epsilon=1.0, delta=1e-6, max_partitions_per_user=1)
    known = pipeline_dp_spend(selection, selection.select_params(), partition_selection.spend_from_accountant, "s")
    _, given = release_with_pipeline_dp([("u", "t")], pipeline_dp.LocalBackend(), selection,
                                        selection.select_params(), partition_selection.spend_from_accountant, "s")
    assert known == given and known.delta == pytest.approx(1e-6)


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
