"""DPSelectTerms: (user_id, term) pairs -> the terms PipelineDP's partition selection releases."""

from __future__ import annotations

import apache_beam as beam
import pipeline_dp

from dp_ops.partition_selection import TermSelectionParams, spend_from_accountant
from dp_ops.pipeline_dp_engine import release_with_pipeline_dp


class DPSelectTerms(beam.PTransform):
    """Output: (term, noisy user count) for every released term; the count is None unless
    `params.with_counts`. `self.spend` is read from the stage's own PipelineDP accountant in expand()."""

    def __init__(self, params: TermSelectionParams):
        super().__init__()
        self._params = params
        self.spend = None

    def expand(self, user_term_pairs):
        params = self._params
        if params.with_counts:
            engine_params, mechanism = params.count_params(), "PipelineDP partition selection + Laplace user count per term"
        else:
            engine_params, mechanism = params.select_params(), "PipelineDP partition selection per term"
        released, self.spend = release_with_pipeline_dp(user_term_pairs, pipeline_dp.BeamBackend(), params,
                                                        engine_params, spend_from_accountant, mechanism)
        if params.with_counts:
            return released | "unpack noisy user counts" >> beam.MapTuple(
                lambda term, metrics: (term, float(metrics.privacy_id_count)))
        return released | "no counts" >> beam.Map(lambda term: (term, None))
