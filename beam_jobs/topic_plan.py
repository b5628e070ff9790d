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
from core.dp_stages import CLUSTER_SIZES, CLUSTERING, KEYWORD_HISTOGRAMS, USER_COUNT
from dp_ops.joint_calibration import (
    JointCalibration,
    StageRequest,
    clustering_request,
    count_request,
    keyword_votes_request,
    user_count_request,
)
from publishing.previous_nights import PreviousNights
from transforms import release_stages
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


def topic_requests(params: InsightsParams) -> list[StageRequest]:
    """The topic stages' calibration requests, in pipeline order: the DP user count (only when it picks the
    k-means dimension), DP k-means, the cluster sizes and the keyword histograms (unless --keyword_mode
    centroid)."""
    privacy, clustering = params.privacy, params.clustering
    weights = privacy.stage_weights()
    requests = [user_count_request(weights[USER_COUNT])] if clustering.counts_users else []
    requests.append(clustering_request(weights[CLUSTERING], clustering.kmeans_iterations))
    # A user adds <= C to one partition each time: L1 = C.
    requests.append(count_request(CLUSTER_SIZES, weights[CLUSTER_SIZES], "laplace", l0=1,
                                  linf=privacy.max_conversations_per_user))
    if params.keywords.keyword_mode in ("histogram", "both"):
        requests.append(keyword_votes_request(weights[KEYWORD_HISTOGRAMS]) if privacy.keyword_votes == "weighted"
                        else count_request(KEYWORD_HISTOGRAMS, weights[KEYWORD_HISTOGRAMS], privacy.histogram_noise,
                                           l0=privacy.keyword_partitions_per_user))
    return requests


def stage_requests(params: InsightsParams) -> list[StageRequest]:
    """The run's DP stages as calibration requests, in pipeline order: the topic stages', then each registered
    release stage's (transforms/release_stages/). The job, the in-process evaluation and the nightly plans
    all calibrate from this list."""
    return topic_requests(params) + [request for stage in release_stages.registered()
                                     for request in stage.requests(params)]


def topic_plan(params: InsightsParams, joint: JointCalibration | None, embedding_dim: int,
               backends: TopicBackends) -> TopicPlan:
    """The topic stages' public parameters, calibrated noise and backends. `joint` None: a non-private
    run (every mechanism switched off, its noise never drawn)."""
    noise_multiplier = joint.stages[CLUSTERING].noise_multiplier if joint else UNDRAWN_NOISE_MULTIPLIER
    return TopicPlan(
        params=params,
        calibration=joint,
        kmeans=params.clustering.kmeans_params(params.privacy.delta, noise_multiplier, embedding_dim, params.run.seed),
        keywords=backends.keywords,
        categories=backends.categories,
        selector=backends.selector,
        namer=backends.namer,
        # Earlier released nights (public): tonight's warm start and the lineages its topics may continue.
        previous=backends.previous,
        new_lineage_prefix=backends.new_lineage_prefix,
        exemplar_writer=backends.exemplar_writer if params.exemplars.exemplars_per_topic else None,
        # Public: the selected facets' declarations (an unknown name is refused here, before any data is read).
        facets=selected_facets(params.keywords.facets, params.keywords.facet_set),
        # --centre_decoder's writer and the bundled public bank; None when names are not decoded.
        decoder=(DecoderSettings(backends.label_writer, backends.name_bank) if params.exemplars.centre_decoder else None),
        token_decoding=backends.token_decoding,
    )
