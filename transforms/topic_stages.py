"""The topic stages of URANIA's Algorithm 1, wired once for both engines (transforms/engine.py): from the
bounded, embedded conversations to the released topics.

    DP k-means (with the DP user count that picks its dimension) -> assign each conversation to a centre
    -> DP cluster sizes -> keep those of noisy size >= tau -> topic keywords (sample, select, DP votes,
    labels) -> names, hierarchy, lineages and exemplars (transforms/topic_release.py)

and, beside them with --themes, the fixed public themes' DP histogram (transforms/theme_histogram.py), and
with --facets each facet's answers overall and per kept topic (transforms/facet_histograms.py).

The job (beam_jobs/insights.py) runs them on Beam over PCollections of ConversationBlocks; the in-process
evaluation (eval/urania_inprocess.py) runs the same stages on a list of blocks. Every DP stage registers
its spend with `budget` as it is applied.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from backends.interfaces import ClusterNamer, ExemplarWriter, KeywordSelector
from backends.keyword_categories import KeywordCategories
from config.embedding import EmbeddingParams, Encoder
from config.exemplars import ExemplarParams
from config.keywords import KeywordParams
from core.dp_stages import CLUSTER_SIZES, KEYWORD_HISTOGRAMS, USER_COUNT
from dp_ops.dp_kmeans import DPKMeansParams
from dp_ops.dp_user_count import UserCountNoise
from dp_ops.joint_calibration import JointCalibration
from dp_ops.run_budget import RunBudget
from publishing.previous_nights import PreviousNights
from transforms.assign_clusters import AssignClusters
from transforms.decode_centres import DecoderSettings
from transforms.dp_cluster_sizes import ClusterIds, DPClusterSizes, KeepLargeClusters, KeptClusters, calibrated_size_params
from transforms.dp_kmeans import DPKMeans, DPKMeansOutput, ThemeSeeds, WarmStart
from transforms.dp_user_count import DPUserCount
from transforms.facet_histograms import FacetHistograms, FacetOutput
from transforms.theme_histogram import ThemeHistogram, ThemeOutput
from transforms.token_decoding import TokenDecodingOutput, TokenDecodingPlan
from transforms.topic_keywords import PublicKeywords, TopicKeywords, TopicKeywordsOutput, VoteNoise, VoteSample
from transforms.topic_release import ReleasedTopics, ReleaseSettings, release_topics


@dataclasses.dataclass(frozen=True)
class TopicPlan:
    """What the topic stages take besides the data: public parameters, the run's calibrated noise and
    the backends. `calibration` None only for the evaluation's non-private baseline (epsilon = inf):
    every mechanism exact, nothing spent. A stage reads its noise from `calibration` by its name
    (dp_ops/dp_stage_specs.py), so a new DP stage needs nothing here. The keyword, exemplar and
    embedding groups are the job's params groups as declared (config/), so a stage reads a new flag of
    its group with nothing added here; beside them, the values the launch resolves."""

    calibration: JointCalibration | None
    delta: float
    max_conversations_per_user: int
    kmeans: DPKMeansParams
    expected_users: int | None
    min_cluster_size: float
    keyword_params: KeywordParams
    samples_per_cluster: int | None    # m, resolved for the keyword selector (None: every conversation)
    weighted_votes: bool               # --keyword_votes weighted (else count)
    seed: int                          # the run's seed (keyword sampling)
    histogram_noise: str | None        # --keyword_votes count: PipelineDP's noise kind
    keyword_partitions_per_user: int   # --keyword_votes count: its L0 bound
    keywords: tuple[str, ...]
    categories: KeywordCategories
    selector: KeywordSelector | None   # None in centroid mode
    namer: ClusterNamer
    previous: PreviousNights
    new_lineage_prefix: str
    embedding: EmbeddingParams
    exemplars: ExemplarParams
    exemplar_writer: ExemplarWriter | None  # None without exemplars
    noise_seed: int | None
    themes: bool = False  # --themes
    facets: tuple = ()  # --facets: (index in the facet set, declaration) pairs (backends.facet_set.FacetSet.select)
    decoder: DecoderSettings | None = None  # --centre_decoder (transforms/decode_centres.py)
    token_decoding: TokenDecodingPlan | None = None  # --token_decoding_steps (transforms/token_decoding.py)

    @property
    def private(self) -> bool:
        return self.calibration is not None

    @property
    def encoder(self) -> Encoder:
        """The run's one encoder (--embedding_model, --embedding_backend, --embedding_device): every stage
        that embeds a text embeds it with this one."""
        return self.embedding.encoder


@dataclasses.dataclass(frozen=True)
class TopicStages:
    """The stages' outputs (PCollections on Beam, values in-process): DP k-means', the assigned blocks,
    the kept clusters' noisy sizes, the keyword step's and the released topics; the themes' (None
    without --themes) and the facets' (None without --facets)."""

    kmeans: DPKMeansOutput
    assigned: Any
    kept_sizes: Any
    keywords: TopicKeywordsOutput
    released: ReleasedTopics
    themes: ThemeOutput | None = None
    facets: FacetOutput | None = None
    token_decoding: TokenDecodingOutput | None = None  # --token_decoding_steps' descriptions


def topic_stages(engine, blocks, plan: TopicPlan, budget: RunBudget | None) -> TopicStages:
    """Applies the topic stages to `blocks` (bounded, embedded ConversationBlocks) on `engine`."""
    stages = plan.calibration.stages if plan.private else {}
    # --projection_dim auto without --expected_users: the dimension comes from a DP count of the users.
    user_count = (DPUserCount(UserCountNoise(stages[USER_COUNT].noise_multiplier, plan.delta), budget,
                              noise_seed=plan.noise_seed) if USER_COUNT in stages else None)
    sizes = (calibrated_size_params(stages[CLUSTER_SIZES], plan.max_conversations_per_user) if plan.private
             else None)
    vote_noise = VoteNoise(num_clusters=plan.kmeans.num_clusters, weighted=plan.weighted_votes,
                           stage=stages.get(KEYWORD_HISTOGRAMS),
                           delta=plan.delta, histogram_noise=plan.histogram_noise,
                           partitions_per_user=plan.keyword_partitions_per_user, noise_seed=plan.noise_seed,
                           private=plan.private)
    # Risen themes with no topic about them take seeds from the smallest of last night's topics.
    previous = plan.previous.make_room(plan.kmeans.num_clusters)
    encoder = plan.encoder
    theme_seeds = (ThemeSeeds(previous.seed_themes, plan.keywords, plan.categories, encoder)
                   if previous.seed_themes else None)
    kmeans = engine.apply("DP k-means", DPKMeans(
        plan.kmeans, budget, noise_seed=plan.noise_seed, encoder=encoder, user_count=user_count,
        expected_users=plan.expected_users, warm=WarmStart(previous.warm_centres, theme_seeds),
        private=plan.private), blocks)
    assigned = engine.apply("assign conversations to centres", AssignClusters(kmeans), kmeans.blocks)
    noisy_sizes = engine.apply("DP cluster sizes", DPClusterSizes(plan.kmeans.num_clusters, sizes, budget), assigned)
    kept_sizes = engine.apply("keep large clusters", KeepLargeClusters(plan.min_cluster_size), noisy_sizes)
    kept_ids = engine.apply("kept cluster ids", ClusterIds(), kept_sizes)
    public = PublicKeywords(plan.keywords, plan.categories, plan.selector, encoder)
    kept = KeptClusters(kept_sizes, kept_ids)
    keywords = engine.apply("topic keywords", TopicKeywords(
        plan.keyword_params, VoteSample(plan.samples_per_cluster, plan.seed), vote_noise, budget, public, kept, kmeans),
        assigned)
    released = release_topics(engine, keywords.labels, kept, kmeans, public, ReleaseSettings(
        plan.namer, plan.new_lineage_prefix, plan.exemplars, plan.exemplar_writer, plan.decoder), previous)
    themes = (engine.apply("themes", ThemeHistogram(
        plan.keywords, plan.categories, encoder, stages["themes"].noise_multiplier if plan.private else None,
        plan.delta, budget, plan.noise_seed), blocks) if plan.themes else None)
    facets = (engine.apply("facets", FacetHistograms(
        plan.facets, plan.keywords, plan.categories, encoder, plan.kmeans.num_clusters, kept_ids,
        (stages["facets"].noise_multiplier, stages["facet_topics"].noise_multiplier) if plan.private else None,
        plan.delta, budget, plan.noise_seed), assigned) if plan.facets else None)
    token_decoding = (engine.apply("token decoding", plan.token_decoding.stage(
        stages["token_decoding"].noise_multiplier if plan.private else None, plan.delta, budget, kept_ids,
        plan.noise_seed), assigned) if plan.token_decoding else None)
    return TopicStages(kmeans, assigned, kept_sizes, keywords, released, themes, facets, token_decoding)
