"""DPSelectTerms: (user_id, term) pairs -> the terms PipelineDP's partition selection releases."""

from __future__ import annotations

import apache_beam as beam
import pipeline_dp

from dp_ops.partition_selection import TermSelectionParams, spend_from_accountant
from dp_ops.pipeline_dp_engine import pipeline_dp_spend, release_with_pipeline_dp
from dp_ops.run_budget import RunBudget
from transforms.dp_stage import DPStage


class DPSelectTerms(DPStage):
    """Output: (term, noisy user count) for every released term; the count is None unless
    `params.with_counts`. `self.spend` is what the stage's own PipelineDP accountant gives the selection,
    known at construction, and registered with `budget` when the stage is applied."""

    def __init__(self, params: TermSelectionParams, budget: RunBudget | None):
        super().__init__(budget)
        self._params = params
        if params.with_counts:
            self._engine_params = params.count_params()
            self._mechanism = "PipelineDP partition selection + Laplace user count per term"
        else:
            self._engine_params, self._mechanism = params.select_params(), "PipelineDP partition selection per term"
        self.spend = pipeline_dp_spend(params, self._engine_params, spend_from_accountant, self._mechanism)

    def expand(self, user_term_pairs):
        released, spend = release_with_pipeline_dp(user_term_pairs, pipeline_dp.BeamBackend(), self._params,
                                                   self._engine_params, spend_from_accountant, self._mechanism,
                                                   expected=self.spend)
        self._spends(spend)
        if self._params.with_counts:
            return released | "unpack noisy user counts" >> beam.MapTuple(
                lambda term, metrics: (term, float(metrics.privacy_id_count)))
        return released | "no counts" >> beam.Map(lambda term: (term, None))
