"""DPSelectTerms: (user_id, term) pairs -> the terms PipelineDP's partition selection releases."""

from __future__ import annotations

import apache_beam as beam
import pipeline_dp

from dp_ops.partition_selection import TermSelectionParams, spend_from_accountant
from dp_ops.pipeline_dp_engine import release_with_pipeline_dp
from dp_ops.run_budget import RunBudget
from transforms.dp_stage import DPStage


class DPSelectTerms(DPStage):
    """Output: (term, noisy user count) for every released term; the count is None unless
    `params.with_counts`. `self.spend` is read from the stage's own PipelineDP accountant in expand(), and registered
    with `budget` there."""

    def __init__(self, params: TermSelectionParams, budget: RunBudget | None):
        super().__init__(budget)
        self._params = params

    def expand(self, user_term_pairs):
        params = self._params
        if params.with_counts:
            engine_params, mechanism = params.count_params(), "PipelineDP partition selection + Laplace user count per term"
        else:
            engine_params, mechanism = params.select_params(), "PipelineDP partition selection per term"
        released, spend = release_with_pipeline_dp(user_term_pairs, pipeline_dp.BeamBackend(), params,
                                                   engine_params, spend_from_accountant, mechanism)
        self._spends(spend)
        if params.with_counts:
            return released | "unpack noisy user counts" >> beam.MapTuple(
                lambda term, metrics: (term, float(metrics.privacy_id_count)))
        return released | "no counts" >> beam.Map(lambda term: (term, None))
