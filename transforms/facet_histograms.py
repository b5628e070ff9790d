"""FacetHistograms: every night, each selected facet's answers (dp_ops/facets.py) overall and per
released topic, as user-level DP histograms over fixed public partitions -> report.json's `facets`.

AnswerFacets answers every facet for each assigned conversation, one conversation at a time (its
classifiers, backends/facet_set.py); a classifier that raises makes the conversation "unknown" for
that facet alone and is counted (Beam counter facets/unknown_<facet>; `unknown` in-process): the
conversation still votes, so a failure neither drops it nor touches its other facets. Per facet, two
DPKeywordVotes releases of the weighted votes (a fixed partition each, dp_ops/fixed_histogram.py):
the answers over all conversations (one "cluster", 0) and the (topic, answer) cross-tab over the kept
topics, whose ids are DP outputs. The section is post-processing of the two.
"""

from __future__ import annotations

import collections
import dataclasses
import functools

import apache_beam as beam
from apache_beam.metrics import Metrics

from backends.facet_set import FacetClassifier, FacetDeclaration
from backends.keyword_categories import KeywordCategories
from config.embedding import Encoder
from core.blas_threads import one_blas_thread
from core.records import ConversationBlock
from dp_ops.facets import UNKNOWN, by_topic_partition, facet_section, overall_partition
from dp_ops.fixed_histogram import FixedPartition
from dp_ops.run_budget import RunBudget
from transforms.dp_votes import DPKeywordVotes
from transforms.vectors import keyword_vectors

OVERALL_CLUSTER = 0  # a facet's overall answers are one "cluster" of DPKeywordVotes' (cluster, column) release


@dataclasses.dataclass(frozen=True)
class FacetOutput:
    """`section`: report.json's facets section, {facet name: facet_section} (a singleton on Beam);
    `stages`: the DP releases, registered with the budget; `unknown`: in-process, the failed
    classifications per facet (on Beam, the counters)."""

    section: object
    stages: tuple[DPKeywordVotes, ...]
    unknown: dict | None = None


class AnswerFacetsFn(beam.DoFn):
    """Each conversation's answer to every facet, as (facet, cluster, answer, weight); a classifier that
    fails gives that record "unknown" for that facet, counted. Public so the evaluations classify with
    exactly the job's code (eval/utility/facet_shares.py, facet_accuracy.py). `encoder`: the run's, which
    embeds the descriptions the conversations' vectors are compared with."""

    def __init__(self, facets: tuple[FacetDeclaration, ...], keywords: tuple[str, ...],
                 categories: KeywordCategories, encoder: Encoder):
        self.facets = tuple(facets)
        self._keywords, self._categories, self._encoder = keywords, categories, encoder
        self.classifiers: list[FacetClassifier] = []
        self.unknown: collections.Counter = collections.Counter()

    def setup(self):
        self._categories.setup()
        category_of = self._categories.category_of
        sensitive = tuple(k for k in self._keywords if category_of.get(k) in self._categories.sensitive)
        # Each facet's thresholds for the run's model; a facet whose multilingual model is the run's needs no switch.
        self.classifiers = [FacetClassifier(facet.for_model(self._encoder.model)) for facet in self.facets]
        for classifier in self.classifiers:
            classifier.setup(functools.partial(keyword_vectors, self._encoder), sensitive)
        self._counters = {facet.name: Metrics.counter("facets", f"unknown_{facet.name}") for facet in self.facets}

    def process(self, block: ConversationBlock):
        # One BLAS thread for the per-conversation products (core/blas_threads.py says why); the answers
        # are taken first so that the limit is not held across the yields.
        with one_blas_thread():
            answers = [[self._answer(classifier, text, embedding) for classifier in self.classifiers]
                       for text, embedding in zip(block.facets, block.embeddings)]
        for row, cluster, weight in zip(answers, block.cluster_ids.tolist(), block.weights.tolist()):
            for classifier, answer in zip(self.classifiers, row):
                yield classifier.facet.name, int(cluster), answer, float(weight)

    def _answer(self, classifier: FacetClassifier, text: str, embedding) -> str:
        name = classifier.facet.name
        try:
            answer = classifier.answer(text, embedding)
        except Exception:  # noqa: BLE001 - any classifier failure is this record's "unknown", counted
            answer = UNKNOWN
        if answer == UNKNOWN:
            self.unknown[name] += 1
            self._counters[name].inc()
        return answer


class FacetHistograms(beam.PTransform):
    """Input: the assigned ConversationBlocks (cluster ids set). Output: FacetOutput. `facets`:
    (index in the facet set, declaration) pairs (backends.facet_set.FacetSet.select); `answers`: the
    per-conversation step answering them (an AnswerFacetsFn of the same declarations); `kept_cluster_ids`
    the kept topics (a PCollection on Beam, a list in-process). `noise_multipliers` None: the
    evaluation's exact baseline; else (overall, by topic), the two stages' calibrated multipliers. `encoder`:
    the run's."""

    def __init__(self, facets, answers: AnswerFacetsFn, num_clusters: int, kept_cluster_ids,
                 noise_multipliers: tuple[float, float] | None, delta: float, budget: RunBudget | None,
                 noise_seed: int | None = None):
        super().__init__()
        self._facets = tuple(facet for _, facet in facets)
        if answers.facets != self._facets:
            raise ValueError("the answering step must answer the facets released, in their order")
        self._fn = answers
        self._releases = []
        for index, facet in facets:
            pair = []
            for partition, clusters, kept, multiplier in (
                    (overall_partition(facet.name, index, facet.answer_ids), 1, [OVERALL_CLUSTER],
                     None if noise_multipliers is None else noise_multipliers[0]),
                    (by_topic_partition(facet.name, index, facet.answer_ids), num_clusters, kept_cluster_ids,
                     None if noise_multipliers is None else noise_multipliers[1])):
                pair.append(_release(partition, clusters, kept, multiplier, delta, budget, noise_seed))
            self._releases.append(tuple(pair))

    @property
    def stages(self) -> tuple[DPKeywordVotes, ...]:
        return tuple(stage for pair in self._releases for stage in pair)

    def _section(self, facet: FacetDeclaration, overall, by_topic) -> dict:
        overall_stage, by_topic_stage = self._releases[self._facets.index(facet)]
        by_topic = dict(by_topic)
        return facet_section(facet.question, facet.answer_ids + (UNKNOWN,), dict(overall), overall_stage.sigma,
                             by_topic, by_topic_stage.sigma, sorted({cluster for cluster, _ in by_topic}),
                             {answer.id: answer.label for answer in facet.answers})

    def answers(self, block: ConversationBlock):
        """The stage's own per-conversation answers for `block` (after `local`, which sets it up)."""
        return self._fn.process(block)

    def local(self, assigned_blocks: list[ConversationBlock]) -> FacetOutput:
        """In-process: the same DoFn and releases on plain values."""
        self._fn.setup()
        votes = [vote for block in assigned_blocks for vote in self._fn.process(block)]
        section = {}
        for facet, (overall, by_topic) in zip(self._facets, self._releases):
            mine = [(cluster, answer, weight) for name, cluster, answer, weight in votes if name == facet.name]
            section[facet.name] = self._section(
                facet, overall.local([(OVERALL_CLUSTER, answer, weight) for _, answer, weight in mine]),
                by_topic.local(mine))
        return FacetOutput(section, self.stages, dict(self._fn.unknown))

    def expand(self, assigned_blocks) -> FacetOutput:
        votes = assigned_blocks | "answer facets per conversation" >> beam.ParDo(self._fn)
        sections = []
        for facet, (overall, by_topic) in zip(self._facets, self._releases):
            name = facet.name
            mine = (votes | f"{name}: its votes" >> beam.Filter(lambda vote, name=name: vote[0] == name)
                    | f"{name}: (topic, answer, weight)" >> beam.Map(lambda vote: vote[1:]))
            overall_release = (mine | f"{name}: overall" >> beam.Map(lambda v: (OVERALL_CLUSTER, v[1], v[2]))
                               | f"{name}: DP answers overall" >> overall
                               | f"{name}: one overall release" >> beam.combiners.ToList())
            topic_release = (mine | f"{name}: DP answers per topic" >> by_topic
                             | f"{name}: one topic release" >> beam.combiners.ToList())
            sections.append(
                overall_release | f"{name}: section" >> beam.Map(
                    lambda release, by_topic_release, facet=facet: (facet.name, self._section(
                        facet, release, by_topic_release)), beam.pvalue.AsSingleton(topic_release)))
        order = [facet.name for facet in self._facets]
        # In the set's order, as in-process: report.json lists the facets the same way on both engines.
        section = (sections | "all facets" >> beam.Flatten() | "one list" >> beam.combiners.ToList()
                   | "facets section" >> beam.Map(lambda pairs: {name: dict(pairs)[name] for name in order}))
        return FacetOutput(section, self.stages)


def _release(partition: FixedPartition, num_clusters: int, kept_cluster_ids, noise_multiplier: float | None,
             delta: float, budget: RunBudget | None, noise_seed: int | None) -> DPKeywordVotes:
    """A fixed partition's release: DPKeywordVotes' Gaussian sum of weighted votes with the
    declaration's spend and noise stream."""
    return DPKeywordVotes(num_clusters, partition.columns, noise_multiplier, delta, kept_cluster_ids, budget,
                          noise_seed, spend_of=partition.spend, noise_stream=partition.noise_stream)
