"""The topic stages of URANIA's Algorithm 1, wired once for both engines (transforms/engine.py): from the
bounded, embedded conversations to the released topics.

    DP k-means (with the DP user count that picks its dimension) -> assign each conversation to a centre
    -> DP cluster sizes -> keep those of noisy size >= tau -> topic keywords (sample, select, DP votes,
    labels) -> names, hierarchy, lineages and exemplars (transforms/topic_release.py)

and, beside them, the release stages the run has (transforms/release_stages/: the fixed public themes' DP
histogram, each facet's answers overall and per kept topic, the token-decoded descriptions), each applied
by its own object and returned by its name.

The job (beam_jobs/insights.py) runs them on Beam over PCollections of ConversationBlocks; the in-process
evaluation (eval/urania_inprocess.py) runs the same stages on a list of blocks. Every DP stage registers
its spend with `budget` as it is applied.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from backends.interfaces import ClusterNamer, ExemplarWriter, KeywordSelector
from backends.keyword_categories import KeywordCategories
from config.embedding import Encoder
from core.dp_stages import CLUSTER_SIZES, KEYWORD_HISTOGRAMS, USER_COUNT
from dp_ops.dp_kmeans import DPKMeansParams
from dp_ops.dp_user_count import UserCountNoise
from dp_ops.joint_calibration import JointCalibration
from dp_ops.run_budget import RunBudget
from publishing.previous_nights import PreviousNights
from transforms import release_stages
from transforms.assign_clusters import AssignClusters
from transforms.decode_centres import DecoderSettings
from transforms.dp_cluster_sizes import ClusterIds, DPClusterSizes, KeepLargeClusters, KeptClusters, calibrated_size_params
from transforms.dp_kmeans import DPKMeans, DPKMeansOutput, ThemeSeeds, WarmStart
from transforms.dp_user_count import DPUserCount
from transforms.release_stage import ReleaseStage, StageInputs, StageRelease
from transforms.token_decoding import TokenDecodingPlan
from transforms.topic_keywords import PublicKeywords, TopicKeywords, TopicKeywordsOutput, VoteNoise, VoteSample
from transforms.topic_release import ReleasedTopics, ReleaseSettings, release_topics


@dataclasses.dataclass(frozen=True)
class TopicPlan:
    """What the topic stages take besides the data: the job's params as they are (InsightsParams: a stage
    reads its own group, so a new flag of a group reaches it with nothing added here), the run's calibrated
    noise, the k-means params (ClusteringParams.kmeans_params: the groups' values with the noise and the
    embedding size the launch resolves), and the backends. `calibration` None only for the evaluation's
    non-private baseline (epsilon = inf): every mechanism exact, nothing spent. A stage reads its noise from
    `calibration` by its name (dp_ops/dp_stage_specs.py)."""

    params: Any  # InsightsParams
    calibration: JointCalibration | None
    kmeans: DPKMeansParams
    keywords: tuple[str, ...]
    categories: KeywordCategories
    selector: KeywordSelector | None   # None in centroid mode
    namer: ClusterNamer
    previous: PreviousNights
    new_lineage_prefix: str
    exemplar_writer: ExemplarWriter | None  # None without exemplars
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
        return self.params.embedding.encoder

    @property
    def delta(self) -> float:
        return self.params.privacy.delta

    @property
    def noise_seed(self) -> int | None:
        """--noise_seed: seeded noise, for tests only."""
        return self.params.privacy.noise_seed


@dataclasses.dataclass(frozen=True)
class TopicStages:
    """The stages' outputs (PCollections on Beam, values in-process): DP k-means', the assigned blocks,
    the kept clusters' noisy sizes, the keyword step's and the released topics; and the release stages that
    ran with their outputs (`releases`: (ReleaseStage, StageRelease) pairs in pipeline order; an output is
    also an attribute by its stage's name, `stages.themes`, None when that stage did not run)."""

    kmeans: DPKMeansOutput
    assigned: Any
    kept_sizes: Any
    keywords: TopicKeywordsOutput
    released: ReleasedTopics
    releases: tuple[tuple[ReleaseStage, StageRelease], ...] = ()

    def __getattr__(self, name: str) -> StageRelease | None:
        # Only for a registered release stage's name: any other missing attribute is still an error.
        if name.startswith("_") or name not in {stage.name for stage in release_stages.registered()}:
            raise AttributeError(name)
        return next((release for stage, release in self.releases if stage.name == name), None)

    @property
    def dead_letters(self) -> list:
        """The release stages' dead letters (PCollections on Beam, lists in-process)."""
        return [release.dead_letter for _, release in self.releases if release.dead_letter is not None]


def topic_stages(engine, blocks, plan: TopicPlan, budget: RunBudget | None) -> TopicStages:
    """Applies the topic stages to `blocks` (bounded, embedded ConversationBlocks) on `engine`."""
    params, privacy = plan.params, plan.params.privacy
    stages = plan.calibration.stages if plan.private else {}
    # --projection_dim auto without --expected_users: the dimension comes from a DP count of the users.
    user_count = (DPUserCount(UserCountNoise(stages[USER_COUNT].noise_multiplier, plan.delta), budget,
                              noise_seed=plan.noise_seed) if USER_COUNT in stages else None)
    sizes = (calibrated_size_params(stages[CLUSTER_SIZES], privacy.max_conversations_per_user) if plan.private
             else None)
    vote_noise = VoteNoise(num_clusters=plan.kmeans.num_clusters, weighted=privacy.keyword_votes == "weighted",
                           stage=stages.get(KEYWORD_HISTOGRAMS),
                           delta=plan.delta, histogram_noise=privacy.histogram_noise,
                           partitions_per_user=privacy.keyword_partitions_per_user, noise_seed=plan.noise_seed,
                           private=plan.private)
    # Risen themes with no topic about them take seeds from the smallest of last night's topics.
    previous = plan.previous.make_room(plan.kmeans.num_clusters)
    encoder = plan.encoder
    theme_seeds = (ThemeSeeds(previous.seed_themes, plan.keywords, plan.categories, encoder)
                   if previous.seed_themes else None)
    kmeans = engine.apply("DP k-means", DPKMeans(
        plan.kmeans, budget, noise_seed=plan.noise_seed, encoder=encoder, user_count=user_count,
        expected_users=params.clustering.expected_users, warm=WarmStart(previous.warm_centres, theme_seeds),
        private=plan.private), blocks)
    assigned = engine.apply("assign conversations to centres", AssignClusters(kmeans), kmeans.blocks)
    noisy_sizes = engine.apply("DP cluster sizes", DPClusterSizes(plan.kmeans.num_clusters, sizes, budget), assigned)
    kept_sizes = engine.apply("keep large clusters", KeepLargeClusters(params.clustering.min_cluster_size), noisy_sizes)
    kept_ids = engine.apply("kept cluster ids", ClusterIds(), kept_sizes)
    public = PublicKeywords(plan.keywords, plan.categories, plan.selector, encoder)
    kept = KeptClusters(kept_sizes, kept_ids)
    keywords = engine.apply("topic keywords", TopicKeywords(
        params.keywords, VoteSample(params.keywords.resolved_samples_per_cluster(params.llm.llm_backend), params.run.seed),
        vote_noise, budget, public, kept, kmeans),
        assigned)
    released = release_topics(engine, keywords.labels, kept, kmeans, public, ReleaseSettings(
        plan.namer, plan.new_lineage_prefix, params.exemplars, plan.exemplar_writer, plan.decoder), previous)
    inputs = StageInputs(blocks, assigned, kept_ids)
    releases = tuple((stage, stage.build(engine, inputs, plan, budget)) for stage in release_stages.enabled(plan))
    return TopicStages(kmeans, assigned, kept_sizes, keywords, released, releases)
