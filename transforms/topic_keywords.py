"""TopicKeywords: the assigned conversations -> each kept topic's label keywords (the keyword step of
URANIA's Algorithm 1), in one of three --keyword_mode's:

- histogram: Poisson-sample each kept cluster's conversations, select keywords of K for each
  (transforms/keyword_histograms.py), release one DP vote histogram (weighted votes, with category
  votes where K has categories) or PipelineDP counts (--keyword_votes count) over kept cluster x K,
  and label each topic from what clears the release floor (transforms/voted_labels.py).
- centroid: the t keywords of K nearest each DP centre (transforms/centroid_keywords.py):
  post-processing of the centres, no budget.
- both: labelled like histogram; the report also lists each topic's t centroid keywords.

K ranked by closeness to each centre is also the histogram modes' fallback label
(--label_fallback centroid) and their candidates (--keyword_candidates). The DP stage registers its
spend with the run's RunBudget when TopicKeywords is applied, like any DPStage.
"""

from __future__ import annotations

import dataclasses

import apache_beam as beam

from backends import factory
from backends.keyword_categories import KeywordCategories
from core.report import CENTROID_SOURCE, labelling_section
from dp_ops.joint_calibration import StageNoise
from dp_ops.keyword_votes import vote_columns
from dp_ops.run_budget import RunBudget
from transforms.centroid_keywords import CentroidKeywords
from transforms.keyword_histograms import (
    DPKeywordHistogram,
    DPKeywordVotes,
    SampleForKeywords,
    SelectKeywords,
    keyword_count_params,
)
from transforms.voted_labels import LabelTopics, category_votes_section, min_users_to_label, vote_floors

MODES = ("histogram", "centroid", "both")


@dataclasses.dataclass(frozen=True)
class KeywordSettings:
    """The run's keyword options (beam_jobs.options.KeywordParams and the privacy ones the votes take),
    as plain values."""

    mode: str                        # --keyword_mode
    top_t: int                       # --keywords_per_cluster
    candidates: int | None           # --keyword_candidates (None: every keyword of K)
    label_fallback: str              # --label_fallback
    samples_per_cluster: int | None  # m, resolved for the selector (None: every conversation)
    min_similarity: float            # --keyword_min_similarity
    weighted: bool                   # --keyword_votes weighted (else count)
    keywords_per_vote: int           # --keywords_per_vote (weighted votes)
    max_keywords_per_conversation: int  # --max_keywords_per_conversation (count votes)
    category_vote_share: float       # --category_vote_share (weighted votes with a categorised K only)
    false_keywords_per_topic: float  # --false_keywords_per_topic
    min_noisy_count: float | None    # --keyword_min_noisy_count
    seed: int                        # the run's seed (sampling)

    @property
    def votes(self) -> bool:
        """The DP stage runs: histogram and both."""
        return self.mode in ("histogram", "both")

    @property
    def ranks_keywords(self) -> bool:
        """K is ranked by closeness to each DP centre: centroid labels, the report's list, a fallback or candidates."""
        return self.mode in ("centroid", "both") or self.label_fallback == "centroid" or bool(self.candidates)


@dataclasses.dataclass(frozen=True)
class VoteNoise:
    """The DP stage's calibrated noise and what it releases over."""

    num_clusters: int
    stage: StageNoise | None         # the joint calibration's keyword_histograms stage (None: centroid mode)
    delta: float
    histogram_noise: str | None      # --keyword_votes count: PipelineDP's noise kind
    partitions_per_user: int | None  # --keyword_votes count: L0 bound
    noise_seed: int | None


@dataclasses.dataclass(frozen=True)
class TopicKeywordsOutput:
    """`labels`: (cluster_id, (label keywords, label source, voted category or None)) for each kept
    cluster. `centroid_keywords`: (cluster_id, its t keywords nearest the centre) for the report with
    --keyword_mode both, else None. `sampled` and `keyword_pairs` (the sampled blocks and the selected
    vote records, for the run stats) and `dead_letter`: None in centroid mode. `labelling`: report.json's
    labelling section (None in centroid mode); `stage`: the DP stage, registered with the budget (None:
    centroid mode)."""

    labels: beam.PCollection
    centroid_keywords: beam.PCollection | None = None
    sampled: beam.PCollection | None = None
    keyword_pairs: beam.PCollection | None = None
    dead_letter: beam.PCollection | None = None
    labelling: dict | None = None
    stage: beam.PTransform | None = None


@dataclasses.dataclass(frozen=True)
class _Votes:
    release: beam.PCollection
    sampled: beam.PCollection
    keyword_pairs: beam.PCollection
    dead_letter: beam.PCollection
    floors: object
    labelling: dict
    stage: beam.PTransform


class TopicKeywords(beam.PTransform):
    """Input: the assigned ConversationBlocks. Output: TopicKeywordsOutput. `kept_sizes`: (cluster_id,
    noisy size) of the kept clusters; `kept_ids` their ids; `centres`, `basis`, `active_dim`: DP
    k-means' singletons (DPKMeansOutput); `keywords`: K; `categories`: K's (KeywordCategories);
    `llm`: the run's resolved LLMParams (or None) for the keyword selector."""

    def __init__(self, settings: KeywordSettings, noise: VoteNoise, budget: RunBudget | None, keywords: tuple[str, ...],
                 categories: KeywordCategories, model_name: str, embedding_backend: str, llm, kept_sizes, kept_ids,
                 centres, basis, active_dim, embedding_device: str = "cpu"):
        super().__init__()
        if settings.mode not in MODES:
            raise ValueError(f"unknown keyword mode {settings.mode!r}")
        self._settings, self._noise, self._budget = settings, noise, budget
        self._keywords, self._categories = tuple(keywords), categories
        self._model_name, self._embedding_backend, self._llm = model_name, embedding_backend, llm
        self._embedding_device = embedding_device
        self._kept_sizes, self._kept_ids = kept_sizes, kept_ids
        self._centres, self._basis, self._active_dim = centres, basis, active_dim
        # Category votes: weighted votes only, and only for a keyword set with categories (dp_ops/keyword_votes.py).
        self._category_share = settings.category_vote_share if settings.weighted and categories.names else 0.0
        self._vote_categories = categories.names if self._category_share else ()

    def expand(self, assigned) -> TopicKeywordsOutput:
        settings = self._settings
        votes = self._votes(assigned) if settings.votes else None
        # K ranked by closeness to each centre: the first t label a topic, the first --keyword_candidates
        # are its candidates, and a topic named by its voted category takes that category's first t.
        ranking = self._ranking() if settings.ranks_keywords else None
        labels = self._labels(votes, ranking)
        top_t = settings.top_t
        centroid_keywords = (ranking | "centroid keywords, top t" >> beam.MapTuple(
            lambda cluster_id, nearest: (cluster_id, nearest[:top_t])) if settings.mode == "both" else None)
        if votes is None:
            return TopicKeywordsOutput(labels=labels, centroid_keywords=centroid_keywords)
        return TopicKeywordsOutput(labels=labels, centroid_keywords=centroid_keywords, sampled=votes.sampled,
                                   keyword_pairs=votes.keyword_pairs, dead_letter=votes.dead_letter,
                                   labelling=votes.labelling, stage=votes.stage)

    def _votes(self, assigned) -> _Votes:
        """Sample, select and release the DP votes (or counts); the release floors and the labelling section."""
        settings, noise, keywords = self._settings, self._noise, self._keywords
        sampled = assigned | "sample conversations for keywords" >> SampleForKeywords(
            self._kept_sizes, settings.samples_per_cluster, settings.seed)
        selector = factory.make_keyword_selector(keywords, self._model_name, settings.min_similarity,
                                                 self._embedding_backend, self._llm, self._embedding_device)
        selection = sampled | "select keywords" >> SelectKeywords(
            selector, keywords,
            settings.keywords_per_vote if settings.weighted else settings.max_keywords_per_conversation,
            weighted=settings.weighted, categories=self._categories, category_share=self._category_share)
        if settings.weighted:
            stage = DPKeywordVotes(noise.num_clusters, vote_columns(keywords, self._vote_categories),
                                   noise.stage.noise_multiplier, noise.delta, self._kept_ids, self._budget,
                                   noise_seed=noise.noise_seed)
        else:
            stage = DPKeywordHistogram(
                keyword_count_params(*noise.stage.pipeline_dp_budget, noise.histogram_noise,
                                     noise.partitions_per_user),
                kept_cluster_ids=self._kept_ids, keywords=keywords, budget=self._budget)
        release = selection.output | "DP keyword histograms" >> stage
        candidates_per_topic = settings.candidates or len(keywords)
        floors = vote_floors(stage.spend.noise, candidates_per_topic, settings.false_keywords_per_topic,
                             settings.min_noisy_count)
        labelling = labelling_section(
            min_users_to_label(floors, self._category_share, len(self._vote_categories)), floors.keyword,
            candidates_per_topic, settings.false_keywords_per_topic,
            category_votes_section(floors, self._category_share, self._vote_categories))
        return _Votes(release, sampled, selection.output, selection.dead_letter, floors, labelling, stage)

    def _ranking(self):
        """(cluster_id, K by closeness to its DP centre): post-processing of the centres, no budget."""
        return self._centres | "centroid keywords" >> CentroidKeywords(
            self._keywords, self._model_name, len(self._keywords), self._kept_ids, self._basis, self._active_dim)

    def _labels(self, votes: _Votes | None, ranking):
        settings, top_t = self._settings, self._settings.top_t
        if votes is None:
            return ranking | "label keywords: nearest the DP centre" >> beam.MapTuple(
                lambda cluster_id, nearest: (cluster_id, (nearest[:top_t], CENTROID_SOURCE, None)))
        candidates_per_topic = settings.candidates
        candidates = (ranking | "candidate keywords" >> beam.MapTuple(
            lambda cluster_id, nearest: (cluster_id, nearest[:candidates_per_topic]))
            if candidates_per_topic else None)
        return votes.release | "label topics from their votes" >> LabelTopics(
            top_t, votes.floors, self._categories if self._vote_categories else None,
            ranking if settings.label_fallback == "centroid" else None, candidates)
