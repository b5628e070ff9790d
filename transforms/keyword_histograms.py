"""Per-cluster DP keyword histograms over the public keyword set K.

SampleForKeywords: Poisson-sample each kept cluster's conversations at rate min(1, m / noisy size),
  a rate computed from DP outputs only; rate 1 (every conversation) when m is None (a free selector).
SelectKeywords: a KeywordSelector picks keywords from K per sampled conversation; anything outside K
  is discarded here, before any aggregate, so DP never depends on the selector behaving. Its output
  is the conversation's votes: weighted (cluster, column, value) for its best j keywords and, with
  category votes, their categories (dp_ops/keyword_votes.py), or (user_id, (cluster, keyword)) pairs
  for the count.
  A conversation whose selection raises is dead-lettered alone (transforms/record_isolation.py).
The weighted votes' DP release is transforms/dp_votes.py's DPKeywordVotes (the themes and facets apply it too).
DPKeywordHistogram: a PipelineDP count per (cluster, keyword) over the public partitions
  (kept clusters x K), user-level: PipelineDP bounds each user to L0 pairs and 1 count per pair.
The labels made from the release (post-processing) are transforms/voted_labels.py's.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from backends.interfaces import KeywordSelector
from core.dp_stages import KEYWORD_HISTOGRAMS
from core.records import ConversationBlock, DeadLetter
from dp_ops.dp_counts import DPCountParams
from dp_ops.keyword_votes import conversation_votes
from dp_ops.run_budget import RunBudget
from dp_ops.sampling import keyword_sampling_rate, poisson_keep
from transforms.dp_count import DPCountPerPartition, ExactCountPerPartition, count_spend
from transforms.record_isolation import StageOutput, run_isolated, split_dead_letters, stage_dead_letter
from transforms.stage_timing import timed


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

    def local(self, assigned_blocks: list[ConversationBlock]) -> list[ConversationBlock]:
        """In-process (transforms/engine.py): `kept_cluster_sizes` a dict."""
        return [sampled for block in assigned_blocks
                for sampled in sample_block(block, self._kept_cluster_sizes, self._samples_per_cluster, self._seed)]

    def expand(self, assigned_blocks):
        return assigned_blocks | "poisson-sample kept clusters" >> beam.FlatMap(
            timed("sample_for_keywords", sample_block), beam.pvalue.AsDict(self._kept_cluster_sizes),
            self._samples_per_cluster, self._seed)


class _SelectKeywordsFn(beam.DoFn):
    def __init__(self, selector: KeywordSelector, keywords: tuple[str, ...], max_keywords: int, weighted: bool,
                 categories, category_share: float):
        self._selector = selector
        self._keywords = frozenset(keywords)
        self._max_keywords = max_keywords
        self._weighted = weighted
        self._categories = categories
        self._category_share = category_share
        self._discarded = Metrics.counter("keywords", "selected_outside_keyword_set")
        self._selected = Metrics.counter("keywords", "keywords_selected")

    def setup(self):
        self._selector.setup()
        self._category_of = None
        if self._categories is not None and self._category_share > 0:
            self._categories.setup()
            self._category_of = self._categories.category_of
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
                for column, value in conversation_votes(in_set, weight, self._max_keywords, self._category_of,
                                                        self._category_share):
                    yield int(cluster_id), column, value
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
    (cluster_id, column, value) (dp_ops.keyword_votes.conversation_votes: keywords, and with
    `categories` and `category_share` > 0 their CategoryVote columns); else (user_id, (cluster_id,
    keyword)) pairs for the PipelineDP count."""

    def __init__(self, selector: KeywordSelector, keywords: tuple[str, ...], max_keywords: int = 5,
                 weighted: bool = False, categories=None, category_share: float = 0.0):
        super().__init__()
        if category_share and not weighted:
            raise ValueError("category votes are weighted votes: count votes take no category share")
        self._fn = _SelectKeywordsFn(selector, keywords, max_keywords, weighted, categories, category_share)

    def local(self, sampled_blocks: list[ConversationBlock]) -> StageOutput:
        """In-process: the same DoFn, block by block; a StageOutput of lists."""
        self._fn.setup()
        try:
            mixed = [element for block in sampled_blocks for element in self._fn.process(block)]
        finally:
            self._fn.teardown()
        return StageOutput(output=[e for e in mixed if not isinstance(e, DeadLetter)],
                           dead_letter=[e for e in mixed if isinstance(e, DeadLetter)])

    def expand(self, sampled_blocks) -> StageOutput:
        return split_dead_letters(sampled_blocks | "select keywords from K" >> beam.ParDo(self._fn))


def keyword_count_params(epsilon: float, delta: float, noise: str, max_partitions_per_user: int) -> DPCountParams:
    # A user adds at most one count to a (cluster, keyword) pair (Linf = 1) and to at most
    # `max_partitions_per_user` pairs (L0); PipelineDP samples a user's pairs down to that bound.
    # L0 = C * max_keywords would keep every pair but costs sqrt(C * max_keywords) in noise; most users
    # have far fewer sampled pairs, so a smaller L0 loses little data and buys less noise.
    return DPCountParams(
        stage=KEYWORD_HISTOGRAMS, epsilon=epsilon, delta=delta if noise == "gaussian" else 0.0, noise=noise,
        max_partitions_contributed=max_partitions_per_user,
        max_contributions_per_partition=1,
    )


class DPKeywordHistogram(beam.PTransform):
    """Output: ((cluster_id, keyword), noisy count) for every kept cluster x keyword in K. `params`
    None: the exact counts of the evaluation's non-private baseline (never the job). `self.spend` is
    known at construction; the count, built when the kept clusters are (they are its public
    partitions), registers it when applied."""

    MECHANISM = "PipelineDP COUNT per (cluster, keyword), public partitions"

    def __init__(self, params: DPCountParams | None, kept_cluster_ids, keywords: tuple[str, ...],
                 budget: RunBudget | None):
        super().__init__()
        self._params = params
        self._kept_cluster_ids = kept_cluster_ids
        self._keywords = keywords
        self._budget = budget
        self.spend = None if params is None else count_spend(params, self.MECHANISM)

    def _count(self, public_partitions):
        if self._params is None:
            return ExactCountPerPartition(public_partitions)
        return DPCountPerPartition(self._params, public_partitions, self.MECHANISM, self._budget)

    def local(self, user_pairs: list) -> dict:
        """In-process (transforms/engine.py): `kept_cluster_ids` a list. With no kept cluster nothing
        is released, but the stage is still accounted for, as on Beam (one stand-in partition)."""
        partitions = [(cluster_id, keyword) for cluster_id in sorted(self._kept_cluster_ids)
                      for keyword in self._keywords]
        histogram = self._count(partitions or [(0, self._keywords[0])]).local(user_pairs)
        return histogram if partitions else {}

    def expand(self, user_pairs):
        keywords = self._keywords
        public_partitions = self._kept_cluster_ids | "public partitions: kept clusters x K" >> beam.FlatMap(
            lambda cluster_id: [(cluster_id, keyword) for keyword in keywords])
        return user_pairs | "DP count per (cluster, keyword)" >> self._count(public_partitions)
