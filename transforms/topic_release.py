"""The released topics from their label keywords, wired once for both engines (transforms/engine.py):
names (made distinct; with --centre_decoder, decoded from each DP centre), the topic hierarchy, lineages
and synthetic exemplars. Post-processing of the
DP outputs: no budget.

The job (beam_jobs/insights.py) runs it on Beam, the in-process evaluation (eval/urania_inprocess.py)
on plain values: on Beam `labels` is a PCollection of (cluster_id, (keywords, source, voted category))
and `kept_sizes`, `kept_ids` and DP k-means' outputs are PCollections; in-process they are a dict, the
same dict, a list, and a DPKMeansOutput of arrays.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from backends.interfaces import ClusterNamer, ExemplarWriter
from backends.keyword_categories import KeywordCategories
from backends.readable_names import readable_namer
from config.embedding import EmbeddingParams
from config.exemplars import ExemplarParams
from publishing.previous_nights import PreviousNights
from transforms.decode_centres import DecodeCentres, DecoderSettings
from transforms.name_clusters import NameClusters
from transforms.topic_hierarchy import BuildTopicHierarchy
from transforms.topic_lineage import AssignLineages
from transforms.write_exemplars import WriteExemplars


@dataclasses.dataclass(frozen=True)
class ReleasedTopics:
    """`topics`: (cluster_id, named topic, with its exemplars); `hierarchy` and `lineage`: singletons
    (transforms/topic_hierarchy.py, transforms/topic_lineage.py)."""

    topics: Any
    hierarchy: Any
    lineage: Any


def release_topics(engine, labels, namer: ClusterNamer, categories: KeywordCategories, kept_sizes, kept_ids, kmeans,
                   previous: PreviousNights, new_lineage_prefix: str, embedding: EmbeddingParams,
                   exemplars: ExemplarParams, exemplar_writer: ExemplarWriter | None = None,
                   decoder: DecoderSettings | None = None, keywords: tuple[str, ...] = ()) -> ReleasedTopics:
    """Names, hierarchy, lineages and exemplars of the kept topics. `kmeans`: DP k-means' centres,
    basis and active dimension (transforms.dp_kmeans.DPKMeansOutput). `embedding` and `exemplars`: the
    job's groups (--exemplars_per_topic 0: no exemplars; else `exemplar_writer` writes them); every text here is
    embedded by the group's one encoder (EmbeddingParams.encoder). `decoder` (--centre_decoder):
    each name and description decoded from its DP centre, before the hierarchy and exemplars read
    them; `keywords`: the public K, whose categories gate a decoded name (transforms/decode_centres.py).
    Every name `namer` writes (topics and groups) and every decoded name passes the readability gate
    (backends/readable_names.py); a name that fails falls back to the vote name."""
    encoder = embedding.encoder
    # Every name a namer writes passes the readability gate, else falls back to the vote name.
    namer = readable_namer(namer, categories, encoder)
    named = engine.apply("name clusters", NameClusters(namer, categories), labels)
    if decoder is not None:
        named = engine.apply("decode DP centres", DecodeCentres(decoder, encoder, keywords, categories, kmeans.centres,
                                                               kmeans.basis, kmeans.active_dim), named)
    hierarchy = engine.apply("topic hierarchy", BuildTopicHierarchy(kept_sizes, kmeans.centres, categories, namer),
                             named)
    # The lineages record the model's name beside the centres (which space they are in): no text is embedded.
    lineage = engine.apply("topic lineages", AssignLineages(kmeans.basis, kept_ids, previous, new_lineage_prefix,
                                                            encoder.model), kmeans.centres)
    if exemplars.exemplars_per_topic:
        named = engine.apply("synthetic exemplars", WriteExemplars(
            exemplar_writer, encoder, exemplars.exemplars_per_topic, exemplars.exemplar_candidates,
            exemplars.exemplar_rounds, kmeans.centres, kmeans.basis, kmeans.active_dim), named)
    return ReleasedTopics(named, hierarchy, lineage)
