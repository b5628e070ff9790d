"""From the job's validated params to its topic stages' plan (transforms/topic_stages.TopicPlan): the one
conversion, which the Beam job (beam_jobs/insights.py) and the in-process evaluation
(eval/urania_inprocess.py) both call. They differ only in the backends they set up (factory-made and
per run in the job; offline and memoised across runs in the evaluation), which they pass in
`TopicBackends`; every public setting is read here, from the params groups that declare it.
"""

from __future__ import annotations

import dataclasses

from backends.facet_set import selected_facets
from backends.interfaces import ExemplarWriter
from config.insights import InsightsParams
from core.dp_stages import CLUSTERING
from dp_ops import dp_stage_specs
from dp_ops.dp_kmeans import DPKMeansParams
from dp_ops.dp_stage_specs import StageSettings
from dp_ops.joint_calibration import JointCalibration, StageRequest
from publishing.previous_nights import PreviousNights
from transforms.decode_centres import DecoderSettings
from transforms.token_decoding import TokenDecodingPlan
from transforms.topic_stages import TopicPlan

# The noise multiplier a non-private run's plan carries (no calibration): it is never drawn.
UNDRAWN_NOISE_MULTIPLIER = 1.0


@dataclasses.dataclass(frozen=True)
class TopicBackends:
    """What a plan needs beyond the params: the set-up backends and the earlier nights. `label_writer`
    only matters with --centre_decoder, `exemplar_writer` only with --exemplars_per_topic > 0."""

    keywords: tuple[str, ...]
    categories: object  # backends.keyword_categories.KeywordCategories
    selector: object | None  # a KeywordSelector; None when no keyword votes are cast
    namer: object  # a ClusterNamer
    previous: PreviousNights
    new_lineage_prefix: str
    exemplar_writer: ExemplarWriter | None
    label_writer: ExemplarWriter | None
    name_bank: object | None  # backends.centre_decoder.NameBank, with label_writer
    token_decoding: TokenDecodingPlan | None = None


def stage_requests(params: InsightsParams) -> list[StageRequest]:
    """The run's DP stages as calibration requests (dp_ops/dp_stage_specs.py)."""
    privacy, clustering = params.privacy, params.clustering
    histogram_noise = privacy.histogram_noise if params.keywords.keyword_mode in ("histogram", "both") else None
    return dp_stage_specs.stage_requests(StageSettings(
        privacy.stage_weights(), clustering.kmeans_iterations, privacy.max_conversations_per_user, histogram_noise,
        privacy.keyword_partitions_per_user, privacy.keyword_votes, clustering.counts_users, params.keywords.themes,
        len(selected_facets(params.keywords.facets, params.keywords.facet_set)), params.decoding.token_decoding))


def topic_plan(params: InsightsParams, joint: JointCalibration | None, embedding_dim: int,
               backends: TopicBackends) -> TopicPlan:
    """The topic stages' public parameters, calibrated noise and backends. `joint` None: a non-private
    run (every mechanism switched off, its noise never drawn)."""
    privacy, clustering, embedding = params.privacy, params.clustering, params.embedding
    exemplars = params.exemplars
    noise_multiplier = joint.stages[CLUSTERING].noise_multiplier if joint else UNDRAWN_NOISE_MULTIPLIER
    return TopicPlan(
        calibration=joint, delta=privacy.delta, max_conversations_per_user=privacy.max_conversations_per_user,
        kmeans=DPKMeansParams(num_clusters=clustering.num_clusters, epsilon=None, delta=privacy.delta,
                              noise_multiplier=noise_multiplier, input_dim=embedding_dim,
                              iterations=clustering.kmeans_iterations, projection_dim=clustering.projection_dim,
                              seed=params.run.seed, basis=clustering.projection_basis,
                              warm_prior=clustering.warm_prior),
        expected_users=clustering.expected_users,
        min_cluster_size=clustering.min_cluster_size,
        keyword_params=params.keywords,
        samples_per_cluster=params.keywords.resolved_samples_per_cluster(params.llm.llm_backend),
        weighted_votes=privacy.keyword_votes == "weighted",
        seed=params.run.seed,
        histogram_noise=privacy.histogram_noise,
        keyword_partitions_per_user=privacy.keyword_partitions_per_user,
        keywords=backends.keywords,
        categories=backends.categories,
        selector=backends.selector,
        namer=backends.namer,
        # Earlier released nights (public): tonight's warm start and the lineages its topics may continue.
        previous=backends.previous,
        new_lineage_prefix=backends.new_lineage_prefix,
        embedding=embedding,
        exemplars=exemplars,
        exemplar_writer=backends.exemplar_writer if exemplars.exemplars_per_topic else None,
        noise_seed=privacy.noise_seed,
        themes=params.keywords.themes,
        # Public: the selected facets' declarations (an unknown name is refused here, before any data is read).
        facets=selected_facets(params.keywords.facets, params.keywords.facet_set),
        # --centre_decoder's writer and the bundled public bank; None when names are not decoded.
        decoder=(DecoderSettings(backends.label_writer, backends.name_bank) if exemplars.centre_decoder else None),
        token_decoding=backends.token_decoding,
    )
