"""TopicKeywords: the assigned conversations -> each kept topic's label keywords (the keyword step of
URANIA's Algorithm 1), in one of three --keyword_mode's:

- histogram: Poisson-sample each kept cluster's conversations, select keywords of K for each
  (transforms/keyword_histograms.py), release one DP vote histogram (weighted votes, with category
  votes where K has categories) or PipelineDP counts (--keyword_votes count) over kept cluster x K,
  and label each topic from what clears the release floor (transforms/voted_labels.py).
- centroid: the t keywords of K nearest each DP centre (transforms/centroid_keywords.py):
  post-processing of the centres, no budget.
- both: labelled like histogram; the report also lists each topic's t centroid keywords, less any of
  a sensitive category (a guess, like a centre-guessed label's: backends/label_evidence.py).

K ranked by closeness to each centre is also the histogram modes' fallback label
(--label_fallback centroid) and their candidates (--keyword_candidates). The DP stage registers its
spend with the run's RunBudget when TopicKeywords is applied, like any DPStage. Its sub-stages are
wired once for both engines (transforms/engine.py): `expand` runs them on Beam, `local` in-process.
"""

from __future__ import annotations

import dataclasses

import apache_beam as beam

from backends.interfaces import KeywordSelector
from backends.keyword_categories import KeywordCategories
from backends.label_evidence import without_sensitive
from config.embedding import Encoder
from config.keywords import KeywordParams
from core.label_sources import CENTROID_SOURCE
from dp_ops.joint_calibration import StageNoise
from dp_ops.keyword_votes import vote_columns
from dp_ops.run_budget import RunBudget
from publishing.report import labelling_section
from transforms.centroid_keywords import CentroidKeywords
from transforms.dp_cluster_sizes import KeptClusters
from transforms.dp_kmeans import DPKMeansOutput
from transforms.dp_votes import DPKeywordVotes
from transforms.engine import BeamEngine, LocalEngine, MapValues
from transforms.keyword_histograms import DPKeywordHistogram, SampleForKeywords, SelectKeywords, keyword_count_params
from transforms.voted_labels import (
    LabelTopics,
    VoteFloors,
    category_votes_section,
    min_users_to_label,
    vote_floors,
)


@dataclasses.dataclass(frozen=True)
class VoteNoise:
    """The DP stage's calibrated noise and what it releases over."""

    num_clusters: int
    weighted: bool                   # --keyword_votes weighted: one Gaussian vote histogram (else count)
    stage: StageNoise | None         # the joint calibration's keyword_histograms stage (None: centroid mode)
    delta: float
    histogram_noise: str | None      # --keyword_votes count: PipelineDP's noise kind
    partitions_per_user: int | None  # --keyword_votes count: L0 bound
    noise_seed: int | None
    private: bool = True             # False: exact sums or counts, the evaluation's non-private baseline only


@dataclasses.dataclass(frozen=True)
class VoteSample:
    """What the vote modes sample: `samples_per_cluster` (m) conversations of each kept cluster (None:
    every one), with the run's `seed`."""

    samples_per_cluster: int | None
    seed: int


@dataclasses.dataclass(frozen=True)
class PublicKeywords:
    """The public keyword set K and what reads it: `keywords` (K), `categories` (K's
    KeywordCategories), `selector` (the vote modes' KeywordSelector; None in centroid mode) and
    `encoder` (the run's one encoder: K's vectors, and every text the release embeds)."""

    keywords: tuple[str, ...]
    categories: KeywordCategories
    selector: KeywordSelector | None
    encoder: Encoder


@dataclasses.dataclass(frozen=True)
class TopicKeywordsOutput:
    """`labels`: (cluster_id, (label keywords, label source, voted category or None, sensitive share or
    None: transforms/voted_labels.VotedLabel)) for each kept cluster. `centroid_keywords`: (cluster_id,
    its t keywords nearest the centre, less any of a sensitive category) for the report with
    --keyword_mode both, else None. `sampled` and `keyword_pairs` (the sampled blocks and the selected
    vote records, for the run stats) and `dead_letter`: None in centroid mode. `labelling`: report.json's
    labelling section (None in centroid mode); `stage`: the DP stage, registered with the budget (None:
    centroid mode); `release`: its noisy release, ((cluster_id, column), noisy value) (None: centroid
    mode), which the evaluation sums into the free themes (eval/utility/nightly_stream.py)."""

    labels: beam.PCollection
    centroid_keywords: beam.PCollection | None = None
    sampled: beam.PCollection | None = None
    keyword_pairs: beam.PCollection | None = None
    dead_letter: beam.PCollection | None = None
    labelling: dict | None = None
    stage: beam.PTransform | None = None
    release: beam.PCollection | None = None


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
    """Input: the assigned ConversationBlocks. Output: TopicKeywordsOutput. `sample`: the vote modes'
    sampling; `public`: K, its categories, the KeywordSelector of the vote modes and the run's encoder (K's
    vectors for the ranking); `kept`: the kept clusters' noisy sizes and ids (KeptClusters); `kmeans`: DP
    k-means' outputs (DPKMeansOutput: the centres, basis and active dimension are read). In-process (`local`,
    transforms/engine.py) each of those is its value and the output's fields are values too."""

    def __init__(self, params: KeywordParams, sample: VoteSample, noise: VoteNoise, budget: RunBudget | None,
                 public: PublicKeywords, kept: KeptClusters, kmeans: DPKMeansOutput):
        super().__init__()
        if params.votes and public.selector is None:
            raise ValueError(f"keyword mode {params.keyword_mode!r} needs a keyword selector")
        self._params, self._noise, self._budget = params, noise, budget
        self._samples_per_cluster, self._seed = sample.samples_per_cluster, sample.seed
        self._keywords, self._categories = tuple(public.keywords), public.categories
        self._selector, self._encoder = public.selector, public.encoder
        self._kept_sizes, self._kept_ids = kept.sizes, kept.ids
        self._centres, self._basis, self._active_dim = kmeans.centres, kmeans.basis, kmeans.active_dim
        # Category votes: weighted votes only, and only for a keyword set with categories (dp_ops/keyword_votes.py).
        self._category_share = params.category_vote_share if noise.weighted and public.categories.names else 0.0
        self._vote_categories = public.categories.names if self._category_share else ()

    def expand(self, assigned) -> TopicKeywordsOutput:
        return self._wired(BeamEngine(), assigned)

    def local(self, assigned: list) -> TopicKeywordsOutput:
        return self._wired(LocalEngine(), assigned)

    def _wired(self, engine, assigned) -> TopicKeywordsOutput:
        params = self._params
        votes = self._votes(engine, assigned) if params.votes else None
        # K ranked by closeness to each centre: the first t label a topic, the first --keyword_candidates
        # are its candidates, and a topic named by its voted category takes that category's first t.
        ranking = self._ranking(engine) if params.ranks_keywords else None
        labels = self._labels(engine, votes, ranking)
        centroid_keywords = self._centroid_keywords(engine, ranking) if params.keyword_mode == "both" else None
        if votes is None:
            return TopicKeywordsOutput(labels=labels, centroid_keywords=centroid_keywords)
        return TopicKeywordsOutput(labels=labels, centroid_keywords=centroid_keywords, sampled=votes.sampled,
                                   keyword_pairs=votes.keyword_pairs, dead_letter=votes.dead_letter,
                                   labelling=votes.labelling, stage=votes.stage, release=votes.release)

    def _votes(self, engine, assigned) -> _Votes:
        """Sample, select and release the DP votes (or counts); the release floors and the labelling section."""
        params, noise, keywords = self._params, self._noise, self._keywords
        sampled = engine.apply("sample conversations for keywords", SampleForKeywords(
            self._kept_sizes, self._samples_per_cluster, self._seed), assigned)
        selection = engine.apply("select keywords", SelectKeywords(
            self._selector, keywords,
            params.keywords_per_vote if noise.weighted else params.max_keywords_per_conversation,
            weighted=noise.weighted, categories=self._categories, category_share=self._category_share), sampled)
        if noise.weighted:
            stage = DPKeywordVotes(noise.num_clusters, vote_columns(keywords, self._vote_categories),
                                   noise.stage.noise_multiplier if noise.private else None, noise.delta,
                                   self._kept_ids, self._budget, noise_seed=noise.noise_seed)
        else:
            stage = DPKeywordHistogram(
                keyword_count_params(*noise.stage.pipeline_dp_budget, noise.histogram_noise,
                                     noise.partitions_per_user) if noise.private else None,
                kept_cluster_ids=self._kept_ids, keywords=keywords, budget=self._budget)
        floors, labelling = self._floors(stage)  # from the spend the stage was constructed with
        release = engine.apply("DP keyword histograms", stage, selection.output)
        return _Votes(release, sampled, selection.output, selection.dead_letter, floors, labelling, stage)

    def _floors(self, stage):
        """The release floors for the stage's noise, and report.json's labelling section. Without noise
        (the evaluation's non-private baseline) any vote releases (weighted), or one user's count."""
        params = self._params
        candidates_per_topic = params.keyword_candidates or len(self._keywords)
        if not self._noise.private:
            floors = VoteFloors(None, params.false_keywords_per_topic, 1e-9 if self._noise.weighted else 1.0)
            return floors, labelling_section(None, floors.keyword, candidates_per_topic,
                                             params.false_keywords_per_topic, None)
        floors = vote_floors(stage.spend.noise, candidates_per_topic, params.false_keywords_per_topic,
                             params.keyword_min_noisy_count)
        return floors, labelling_section(
            min_users_to_label(floors, self._category_share, len(self._vote_categories)), floors.keyword,
            candidates_per_topic, params.false_keywords_per_topic,
            category_votes_section(floors, self._category_share, self._vote_categories))

    def _ranking(self, engine):
        """(cluster_id, K by closeness to its DP centre): post-processing of the centres, no budget."""
        return engine.apply("centroid keywords", CentroidKeywords(
            self._keywords, self._encoder, len(self._keywords), self._kept_ids, self._basis, self._active_dim),
            self._centres)

    def _centroid_keywords(self, engine, ranking):
        """(cluster_id, its first t keywords nearest the centre less any of a sensitive category): a
        guess with no vote behind it, released as a centre-guessed label's keywords are."""
        top_t, categories = self._params.keywords_per_cluster, self._categories
        return engine.apply("centroid keywords, top t", MapValues(
            lambda nearest: without_sensitive(nearest[:top_t], categories.category_of, categories.sensitive)), ranking)

    def _labels(self, engine, votes: _Votes | None, ranking):
        params, top_t = self._params, self._params.keywords_per_cluster
        if votes is None:
            return engine.apply("label keywords: nearest the DP centre", MapValues(
                lambda nearest: (nearest[:top_t], CENTROID_SOURCE, None, None)), ranking)
        candidates_per_topic = params.keyword_candidates  # 0: every keyword of K
        candidates = (engine.apply("candidate keywords", MapValues(lambda nearest: nearest[:candidates_per_topic]),
                                   ranking) if candidates_per_topic else None)
        # The categories go with any votes: without category votes a sensitive category's keywords still
        # name a topic only on a large enough share of its keyword votes (transforms/voted_labels.py).
        return engine.apply("label topics from their votes", LabelTopics(
            top_t, votes.floors, self._categories,
            ranking if params.label_fallback == "centroid" else None, candidates), votes.release)
