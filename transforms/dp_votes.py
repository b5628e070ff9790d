"""DPKeywordVotes: weighted votes' Gaussian sum per (cluster, column) over public partitions, the one DP
release of every histogram of weighted votes: the topics' keywords and categories
(transforms/keyword_histograms.py's SelectKeywords casts them), the themes (transforms/theme_histogram.py)
and the facets (transforms/facet_histograms.py). L2 sensitivity 1: a user's vote vector has norm at most 1
(dp_ops/keyword_votes.py)."""

from __future__ import annotations

import apache_beam as beam

from core.dp_stages import KEYWORD_HISTOGRAMS
from dp_ops.keyword_votes import NOISE_STREAM, exact_vote_sums, noisy_vote_sums, released_histogram, vote_spend
from dp_ops.run_budget import RunBudget
from transforms.dp_stage import DPStage
from transforms.stage_timing import timed
from transforms.sum_arrays import SumArraysFn


class _VoteSumsFn(SumArraysFn):
    """Sums (cluster, column index, value) votes into a (num_clusters, |columns|) array."""

    def add_input(self, accumulator, vote):
        cluster, column_index, value = vote
        accumulator[cluster, column_index] += value
        return accumulator


def _noisy_histogram(exact_sums, kept_cluster_ids, columns, sigma, noise_seed, noise_stream=NOISE_STREAM):
    noisy = noisy_vote_sums(exact_sums, sigma, noise_seed, noise_stream)
    return list(released_histogram(noisy, kept_cluster_ids, columns).items())


class DPKeywordVotes(DPStage):
    """Input: (cluster_id, column, value) votes. Output: ((cluster_id, column), noisy sum) for every
    kept cluster x column (dp_ops.keyword_votes.vote_columns: K, then the categories). The spend
    depends on the parameters alone, so it is registered at construction. `noise_multiplier` None:
    the exact sums of the evaluation's non-private baseline (never the job), spending nothing.

    The same release serves any histogram of weighted votes (a user's vote vector of L2 norm <= 1)
    over fixed public partitions: `spend_of(noise_multiplier, delta)` names its stage and mechanism,
    `noise_stream` its seeded test noise, and `kept_cluster_ids` may be a fixed list (the themes,
    transforms/theme_histogram.py, are one "cluster", 0)."""

    def __init__(self, num_clusters: int, columns: tuple, noise_multiplier: float | None, delta: float,
                 kept_cluster_ids, budget: RunBudget | None, noise_seed: int | None = None,
                 spend_of=vote_spend, noise_stream: int = NOISE_STREAM):
        super().__init__(budget)
        self._num_clusters = num_clusters
        self._columns = tuple(columns)
        self._kept_cluster_ids = kept_cluster_ids
        self._noise_seed = noise_seed
        self._noise_stream = noise_stream
        self._sigma = 0.0
        if noise_multiplier is not None:
            self._spends(spend_of(noise_multiplier, delta))
            self._sigma = self.spend.noise["sigma"]

    @property
    def sigma(self) -> float:
        """The noise's standard deviation on each released sum (0: the exact baseline)."""
        return self._sigma

    def local(self, votes: list) -> dict:
        """In-process (transforms/engine.py): `kept_cluster_ids` a list."""
        exact = exact_vote_sums(votes, self._num_clusters, self._columns)
        return dict(_noisy_histogram(exact, self._kept_cluster_ids, self._columns, self._sigma, self._noise_seed,
                                     self._noise_stream))

    def expand(self, votes):
        index = {column: j for j, column in enumerate(self._columns)}
        kept = (self._kept_cluster_ids if isinstance(self._kept_cluster_ids, (list, tuple))
                else beam.pvalue.AsList(self._kept_cluster_ids))
        return (
            votes
            | "index votes" >> beam.MapTuple(lambda cluster, column, value: (cluster, index[column], value))
            | "sum votes per (cluster, column)" >> beam.CombineGlobally(
                _VoteSumsFn((self._num_clusters, len(self._columns))))
            | "add Gaussian noise, keep kept clusters" >> beam.FlatMap(
                timed(self.spend.stage if self.spend else KEYWORD_HISTOGRAMS, _noisy_histogram), kept,
                self._columns, self._sigma, self._noise_seed, self._noise_stream)
        )
