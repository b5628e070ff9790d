"""Every DP stage registers its spend with the run's budget, or the job refuses to run."""

import apache_beam as beam
import numpy as np
import pytest

from beam_jobs.insights import build_pipeline
from config.insights import InsightsOptions, insights_params
from core.run_context import make_run_context
from dp_ops.dp_counts import DPCountParams
from dp_ops.run_budget import RunBudget
from tests.conftest import local_pipeline
from transforms.dp_count import DPCountPerPartition
from transforms.dp_stage import require_registered_dp_stages, unregistered_dp_stages

PARAMS = DPCountParams(stage="extra", epsilon=1.0, noise="laplace", max_contributions=1)


def _job_pipeline(tmp_path, *flags):
    params = insights_params(InsightsOptions(["--input", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "out"),
                                              "--seed", "1", *flags]))
    pipeline = local_pipeline()
    context = make_run_context(params.reading.input, params.run.output, None)
    return pipeline, build_pipeline(pipeline, params, 384, context)


@pytest.mark.parametrize("mode,votes", [("histogram", "weighted"), ("centroid", "weighted"), ("both", "weighted"),
                                        ("histogram", "count")])
def test_the_job_registers_every_dp_stage_and_reports_their_pld_total(tmp_path, mode, votes):
    pipeline, budget = _job_pipeline(tmp_path, "--keyword_mode", mode, "--keyword_votes", votes)
    assert unregistered_dp_stages(pipeline) == []
    stages = [spend.stage for spend in budget.entries]
    # The default releases: the topics' stages, the themes, and each of the bundled set's three facets over all
    # conversations and per topic (one spend per facet and stage).
    expected = (["user_count", "clustering", "cluster_sizes"] + (["keyword_histograms"] if mode != "centroid" else [])
                + ["themes"] + ["facets"] * 3 + ["facet_topics"] * 3)
    assert sorted(stages) == sorted(expected), stages
    epsilon, delta = budget.total()
    assert 6.99 <= epsilon <= 7.0 + 1e-9 and delta == 1e-6


def test_a_dp_stage_without_the_budget_is_found_and_refused():
    pipeline = local_pipeline()
    _ = (pipeline | beam.Create([("u", 0)])
         | "a stray count" >> DPCountPerPartition(PARAMS, [0, 1], "COUNT", None))
    assert unregistered_dp_stages(pipeline) == ["a stray count"]
    with pytest.raises(RuntimeError, match="not registered with the run's privacy budget: a stray count"):
        require_registered_dp_stages(pipeline)


def test_a_registered_dp_stage_passes_and_its_spend_carries_its_event():
    pipeline, budget = local_pipeline(), RunBudget(1e-6)
    stage = DPCountPerPartition(PARAMS, [0, 1], "COUNT", budget)
    _ = pipeline | beam.Create([("u", 0)]) | "a counted count" >> stage
    require_registered_dp_stages(pipeline)
    assert [s.stage for s in budget.entries] == ["extra"] and budget.entries[0].event is not None
    assert np.isclose(budget.epsilon(), 1.0, atol=1e-6)
