"""DPSelectTerms: (user_id, term) pairs -> the terms PipelineDP's partition selection releases."""

from __future__ import annotations

import apache_beam as beam
import pipeline_dp

from dp_ops.partition_selection import TermSelectionParams, spend_from_accountant


class DPSelectTerms(beam.PTransform):
    """Output: (term, noisy user count) for every released term; the count is None unless
    `params.with_counts`. `self.spend` is read from the stage's own PipelineDP accountant in expand()."""

    def __init__(self, params: TermSelectionParams):
        super().__init__()
        self._params = params
        self.spend = None

    def expand(self, user_term_pairs):
        params = self._params
        accountant = params.budget_accountant()
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.BeamBackend())
        extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda pair: pair[0],
                                                partition_extractor=lambda pair: pair[1],
                                                value_extractor=lambda pair: 0)
        if params.with_counts:
            counted = engine.aggregate(user_term_pairs, params.count_params(), extractors)
            accountant.compute_budgets()
            released = counted | "unpack noisy user counts" >> beam.MapTuple(
                lambda term, metrics: (term, float(metrics.privacy_id_count)))
            mechanism = "PipelineDP partition selection + Laplace user count per term"
        else:
            selected = engine.select_partitions(user_term_pairs, params.select_params(), extractors)
            accountant.compute_budgets()
            released = selected | "no counts" >> beam.Map(lambda term: (term, None))
            mechanism = "PipelineDP partition selection per term"
        self.spend = spend_from_accountant(params, accountant, mechanism)
        return released
