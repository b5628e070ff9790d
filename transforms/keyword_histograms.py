"""Per-cluster DP keyword histograms over the public keyword set K.

SampleForKeywords: Poisson-sample each kept cluster's conversations at rate min(1, m / noisy size),
  a rate computed from DP outputs only.
SelectKeywords: a KeywordSelector picks <= 5 keywords from K per sampled conversation; anything
  outside K is discarded here, before any aggregate, so DP never depends on the selector behaving.
  A conversation whose selection raises is dead-lettered alone (transforms/record_isolation.py).
DPKeywordHistogram: a PipelineDP count per (cluster, keyword) over the public partitions
  (kept clusters x K), user-level: PipelineDP bounds each user to L0 pairs and 1 count per pair.
TopKeywords: the t keywords with the largest noisy counts above a noise floor (post-processing),
  the floor chosen so that pure noise rarely puts a keyword into a topic.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from backends.interfaces import KeywordSelector
from core.records import ConversationBlock
from dp_ops.dp_counts import DPCountParams
from dp_ops.run_budget import RunBudget
from dp_ops.sampling import keyword_sampling_rate, poisson_keep
from transforms.dp_count import DPCountPerPartition
from transforms.record_isolation import StageOutput, run_isolated, split_dead_letters, stage_dead_letter
from transforms.stage_timing import timed


def sample_block(block: ConversationBlock, noisy_sizes: dict[int, float], samples_per_cluster: int,
                 seed: int) -> list[ConversationBlock]:
    keep = np.array([
        cluster in noisy_sizes and poisson_keep(keyword_sampling_rate(samples_per_cluster, noisy_sizes[cluster]),
                                                seed, "keywords", conversation_id)
        for conversation_id, cluster in zip(block.conversation_ids, block.cluster_ids.tolist())
    ], dtype=bool)
    Metrics.counter("keywords", "conversations_sampled").inc(int(keep.sum()))
    return [block.subset(keep)] if keep.any() else []


class SampleForKeywords(beam.PTransform):
    def __init__(self, kept_cluster_sizes, samples_per_cluster: int, seed: int):
        super().__init__()
        self._kept_cluster_sizes = kept_cluster_sizes
        self._samples_per_cluster = samples_per_cluster
        self._seed = seed

    def expand(self, assigned_blocks):
        return assigned_blocks | "poisson-sample kept clusters" >> beam.FlatMap(
            timed("sample_for_keywords", sample_block), beam.pvalue.AsDict(self._kept_cluster_sizes),
            self._samples_per_cluster, self._seed)


class _SelectKeywordsFn(beam.DoFn):
    def __init__(self, selector: KeywordSelector, keywords: tuple[str, ...], max_keywords: int):
        self._selector = selector
        self._keywords = frozenset(keywords)
        self._max_keywords = max_keywords
        self._discarded = Metrics.counter("keywords", "selected_outside_keyword_set")
        self._selected = Metrics.counter("keywords", "keywords_selected")

    def setup(self):
        self._selector.setup()
        self._timed_select = timed("select_keywords", self._select)

    def process(self, block: ConversationBlock):
        picks = self._timed_select(block)
        for conversation_id, user_id, cluster_id, (chosen, error) in zip(
                block.conversation_ids, block.user_ids, block.cluster_ids.tolist(), picks):
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
            for keyword in in_set:
                yield user_id, (int(cluster_id), keyword)

    def _select(self, block: ConversationBlock):
        return run_isolated(
            lambda rows: self._selector.select([block.facets[i] for i in rows], block.embeddings[rows],
                                               self._max_keywords),
            list(range(len(block))))


class SelectKeywords(beam.PTransform):
    """Output: StageOutput of (user_id, (cluster_id, keyword)) for each distinct in-K keyword of a
    conversation, and the DeadLetters of conversations whose selection failed."""

    def __init__(self, selector: KeywordSelector, keywords: tuple[str, ...], max_keywords: int = 5):
        super().__init__()
        self._fn = _SelectKeywordsFn(selector, keywords, max_keywords)

    def expand(self, sampled_blocks) -> StageOutput:
        return split_dead_letters(sampled_blocks | "select keywords from K" >> beam.ParDo(self._fn))


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


def top_keywords(cluster_and_counts, top_t: int, min_noisy_count: float):
    cluster_id, keyword_counts = cluster_and_counts
    ranked = sorted(((count, keyword) for keyword, count in keyword_counts if count >= min_noisy_count),
                    key=lambda pair: (-pair[0], pair[1]))
    return cluster_id, [keyword for _, keyword in ranked[:top_t]]


class TopKeywords(beam.PTransform):
    """Output: (cluster_id, [up to t keywords]) for every kept cluster (an empty list when none
    clears the noise floor)."""

    def __init__(self, top_t: int, min_noisy_count: float):
        super().__init__()
        self._top_t = top_t
        self._min_noisy_count = min_noisy_count

    def expand(self, histogram):
        return (
            histogram
            | "key by cluster" >> beam.MapTuple(lambda partition, count: (partition[0], (partition[1], count)))
            | "group keywords per cluster" >> beam.GroupByKey()
            | "keep top t above noise floor" >> beam.Map(top_keywords, self._top_t, self._min_noisy_count)
        )
