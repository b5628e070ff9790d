"""Per-cluster DP keyword histograms over the public keyword set K.

SampleForKeywords: Poisson-sample each kept cluster's conversations at rate min(1, m / noisy size),
  a rate computed from DP outputs only; rate 1 (every conversation) when m is None (a free selector).
SelectKeywords: a KeywordSelector picks keywords from K per sampled conversation; anything outside K
  is discarded here, before any aggregate, so DP never depends on the selector behaving. Its output
  is the conversation's votes: weighted (cluster, keyword, weight / sqrt(j)) for its best j keywords
  (dp_ops/keyword_votes.py), or (user_id, (cluster, keyword)) pairs for the count.
  A conversation whose selection raises is dead-lettered alone (transforms/record_isolation.py).
DPKeywordVotes: the weighted votes' Gaussian sum per (cluster, keyword) over the public partitions
  (kept clusters x K), L2 sensitivity 1 (the default).
DPKeywordHistogram: a PipelineDP count per (cluster, keyword) over the public partitions
  (kept clusters x K), user-level: PipelineDP bounds each user to L0 pairs and 1 count per pair.
TopKeywords: the t keywords with the largest noisy values above a noise floor (post-processing),
  the floor chosen so that pure noise rarely puts a keyword into a topic.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from backends.interfaces import KeywordSelector
from core.records import ConversationBlock
from core.report import CENTROID_SOURCE, HISTOGRAM_SOURCE, NO_SOURCE
from dp_ops.dp_counts import DPCountParams
from dp_ops.keyword_votes import conversation_votes, noisy_vote_sums, released_histogram, vote_spend
from dp_ops.run_budget import RunBudget
from dp_ops.sampling import keyword_sampling_rate, poisson_keep
from transforms.dp_count import DPCountPerPartition
from transforms.dp_stage import DPStage
from transforms.record_isolation import StageOutput, run_isolated, split_dead_letters, stage_dead_letter
from transforms.stage_timing import timed
from transforms.sum_arrays import SumArraysFn


def sample_block(block: ConversationBlock, noisy_sizes: dict[int, float], samples_per_cluster: int | None,
                 seed: int) -> list[ConversationBlock]:
    keep = np.array([
        cluster in noisy_sizes and poisson_keep(keyword_sampling_rate(samples_per_cluster, noisy_sizes[cluster]),
                                                seed, "keywords", conversation_id)
        for conversation_id, cluster in zip(block.conversation_ids, block.cluster_ids.tolist())
    ], dtype=bool)
    Metrics.counter("keywords", "conversations_sampled").inc(int(keep.sum()))
    return [block.subset(keep)] if keep.any() else []


class SampleForKeywords(beam.PTransform):
    def __init__(self, kept_cluster_sizes, samples_per_cluster: int | None, seed: int):
        super().__init__()
        self._kept_cluster_sizes = kept_cluster_sizes
        self._samples_per_cluster = samples_per_cluster
        self._seed = seed

    def expand(self, assigned_blocks):
        return assigned_blocks | "poisson-sample kept clusters" >> beam.FlatMap(
            timed("sample_for_keywords", sample_block), beam.pvalue.AsDict(self._kept_cluster_sizes),
            self._samples_per_cluster, self._seed)


class _SelectKeywordsFn(beam.DoFn):
    def __init__(self, selector: KeywordSelector, keywords: tuple[str, ...], max_keywords: int, weighted: bool):
        self._selector = selector
        self._keywords = frozenset(keywords)
        self._max_keywords = max_keywords
        self._weighted = weighted
        self._discarded = Metrics.counter("keywords", "selected_outside_keyword_set")
        self._selected = Metrics.counter("keywords", "keywords_selected")

    def setup(self):
        self._selector.setup()
        self._timed_select = timed("select_keywords", self._select)

    def teardown(self):
        self._selector.teardown()

    def process(self, block: ConversationBlock):
        picks = self._timed_select(block)
        for conversation_id, user_id, cluster_id, weight, (chosen, error) in zip(
                block.conversation_ids, block.user_ids, block.cluster_ids.tolist(), block.weights.tolist(), picks):
            if error is None and not isinstance(chosen, (list, tuple)):
                error = f"the selector gave {type(chosen).__name__}, not a list of keywords"
            if error is not None:
                yield stage_dead_letter("select_keywords", "keyword_selection_failed", conversation_id, error)
                continue
            chosen = [k for k in chosen if isinstance(k, str)]
            in_set = [k for k in chosen if k in self._keywords]
            self._discarded.inc(len(chosen) - len(in_set))
            in_set = list(dict.fromkeys(in_set))[: self._max_keywords]  # distinct, capped
            self._selected.inc(len(in_set))
            if self._weighted:
                for keyword, value in conversation_votes(in_set, weight, self._max_keywords):
                    yield int(cluster_id), keyword, value
            else:
                for keyword in in_set:
                    yield user_id, (int(cluster_id), keyword)

    def _select(self, block: ConversationBlock):
        return run_isolated(
            lambda rows: self._selector.select([block.facets[i] for i in rows], block.embeddings[rows],
                                               self._max_keywords),
            list(range(len(block))))


class SelectKeywords(beam.PTransform):
    """Output: StageOutput of a conversation's votes for its first `max_keywords` distinct in-K
    keywords, and the DeadLetters of conversations whose selection failed. Votes: weighted,
    (cluster_id, keyword, value) (dp_ops.keyword_votes.conversation_votes); else (user_id,
    (cluster_id, keyword)) pairs for the PipelineDP count."""

    def __init__(self, selector: KeywordSelector, keywords: tuple[str, ...], max_keywords: int = 5,
                 weighted: bool = False):
        super().__init__()
        self._fn = _SelectKeywordsFn(selector, keywords, max_keywords, weighted)

    def expand(self, sampled_blocks) -> StageOutput:
        return split_dead_letters(sampled_blocks | "select keywords from K" >> beam.ParDo(self._fn))


class _VoteSumsFn(SumArraysFn):
    """Sums (cluster, keyword index, value) votes into a (num_clusters, |K|) array."""

    def add_input(self, accumulator, vote):
        cluster, keyword_index, value = vote
        accumulator[cluster, keyword_index] += value
        return accumulator


def _noisy_histogram(exact_sums, kept_cluster_ids, keywords, sigma, noise_seed):
    noisy = noisy_vote_sums(exact_sums, sigma, noise_seed)
    return list(released_histogram(noisy, kept_cluster_ids, keywords).items())


class DPKeywordVotes(DPStage):
    """Input: (cluster_id, keyword, value) votes. Output: ((cluster_id, keyword), noisy sum) for
    every kept cluster x keyword in K. The spend depends on the parameters alone, so it is
    registered at construction."""

    def __init__(self, num_clusters: int, keywords: tuple[str, ...], noise_multiplier: float, delta: float,
                 kept_cluster_ids, budget: RunBudget | None, noise_seed: int | None = None):
        super().__init__(budget)
        self._num_clusters = num_clusters
        self._keywords = tuple(keywords)
        self._kept_cluster_ids = kept_cluster_ids
        self._noise_seed = noise_seed
        self._spends(vote_spend(noise_multiplier, delta))

    def expand(self, votes):
        index = {keyword: j for j, keyword in enumerate(self._keywords)}
        return (
            votes
            | "index votes" >> beam.MapTuple(lambda cluster, keyword, value: (cluster, index[keyword], value))
            | "sum votes per (cluster, keyword)" >> beam.CombineGlobally(
                _VoteSumsFn((self._num_clusters, len(self._keywords))))
            | "add Gaussian noise, keep kept clusters" >> beam.FlatMap(
                timed("keyword_histograms", _noisy_histogram), beam.pvalue.AsList(self._kept_cluster_ids),
                self._keywords, self.spend.noise["sigma"], self._noise_seed)
        )


def keyword_count_params(epsilon: float, delta: float, noise: str, max_partitions_per_user: int) -> DPCountParams:
    # A user adds at most one count to a (cluster, keyword) pair (Linf = 1) and to at most
    # `max_partitions_per_user` pairs (L0); PipelineDP samples a user's pairs down to that bound.
    # L0 = C * max_keywords would keep every pair but costs sqrt(C * max_keywords) in noise; most users
    # have far fewer sampled pairs, so a smaller L0 loses little data and buys less noise.
    return DPCountParams(
        stage="keyword_histograms", epsilon=epsilon, delta=delta if noise == "gaussian" else 0.0, noise=noise,
        max_partitions_contributed=max_partitions_per_user,
        max_contributions_per_partition=1,
    )


class DPKeywordHistogram(beam.PTransform):
    """Output: ((cluster_id, keyword), noisy count) for every kept cluster x keyword in K."""

    def __init__(self, params: DPCountParams, kept_cluster_ids, keywords: tuple[str, ...], budget: RunBudget | None):
        super().__init__()
        self._params = params
        self._kept_cluster_ids = kept_cluster_ids
        self._keywords = keywords
        self._budget = budget
        self.spend = None

    def expand(self, user_pairs):
        keywords = self._keywords
        public_partitions = self._kept_cluster_ids | "public partitions: kept clusters x K" >> beam.FlatMap(
            lambda cluster_id: [(cluster_id, keyword) for keyword in keywords])
        count = DPCountPerPartition(self._params, public_partitions,
                                    "PipelineDP COUNT per (cluster, keyword), public partitions", self._budget)
        histogram = user_pairs | "DP count per (cluster, keyword)" >> count
        self.spend = count.spend
        return histogram


def top_keywords(cluster_and_counts, top_t: int, min_noisy_count: float, candidates=None):
    """The `top_t` keywords with the largest noisy values >= the floor; with `candidates` (a
    collection of keywords), only those are considered."""
    cluster_id, keyword_counts = cluster_and_counts
    ranked = sorted(((count, keyword) for keyword, count in keyword_counts
                     if count >= min_noisy_count and (candidates is None or keyword in candidates)),
                    key=lambda pair: (-pair[0], pair[1]))
    return cluster_id, [keyword for _, keyword in ranked[:top_t]]


def label_keywords(histogram_keywords: list[str], centroid_keywords: list[str] | None) -> tuple[list[str], str]:
    """A topic's label keywords and where they came from: the DP histogram's when any cleared the
    floor, else (with the fallback on) the keywords nearest its DP centre, else none."""
    if histogram_keywords:
        return list(histogram_keywords), HISTOGRAM_SOURCE
    if centroid_keywords:
        return list(centroid_keywords), CENTROID_SOURCE
    return [], NO_SOURCE


def _top_keywords_of_candidates(cluster_and_counts, top_t, min_noisy_count, nearest_by_cluster):
    cluster_id = cluster_and_counts[0]
    return top_keywords(cluster_and_counts, top_t, min_noisy_count, frozenset(nearest_by_cluster.get(cluster_id, ())))


class TopKeywords(beam.PTransform):
    """Output: (cluster_id, [up to t keywords]) for every kept cluster (an empty list when none
    clears the noise floor). With `candidates` ((cluster_id, [keywords nearest its DP centre])),
    a topic's keywords are chosen among its candidates only."""

    def __init__(self, top_t: int, min_noisy_count: float, candidates=None):
        super().__init__()
        self._top_t = top_t
        self._min_noisy_count = min_noisy_count
        self._candidates = candidates

    def expand(self, histogram):
        grouped = (
            histogram
            | "key by cluster" >> beam.MapTuple(lambda partition, count: (partition[0], (partition[1], count)))
            | "group keywords per cluster" >> beam.GroupByKey()
        )
        if self._candidates is None:
            return grouped | "keep top t above noise floor" >> beam.Map(top_keywords, self._top_t,
                                                                        self._min_noisy_count)
        return grouped | "keep top t candidates above noise floor" >> beam.Map(
            _top_keywords_of_candidates, self._top_t, self._min_noisy_count, beam.pvalue.AsDict(self._candidates))


def _label(cluster_and_keywords, nearest_by_cluster, top_t):
    cluster_id, histogram_keywords = cluster_and_keywords
    fallback = None if nearest_by_cluster is None else nearest_by_cluster.get(cluster_id, [])[:top_t]
    return cluster_id, label_keywords(histogram_keywords, fallback)


class LabelKeywords(beam.PTransform):
    """Input: TopKeywords' output. Output: (cluster_id, (keywords, label source)): the histogram's
    keywords, else those of `centroid_keywords` ((cluster_id, [keywords nearest its DP centre]),
    post-processing of the DP centres) when given, else none."""

    def __init__(self, centroid_keywords, top_t: int):
        super().__init__()
        self._centroid_keywords = centroid_keywords
        self._top_t = top_t

    def expand(self, histogram_keywords):
        if self._centroid_keywords is None:
            return histogram_keywords | "no fallback" >> beam.Map(_label, None, self._top_t)
        return histogram_keywords | "fall back to centroid keywords" >> beam.Map(
            _label, beam.pvalue.AsDict(self._centroid_keywords), self._top_t)
