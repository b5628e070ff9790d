"""The released topics from their label keywords, wired once for both engines (transforms/engine.py):
names (made distinct; with --centre_decoder, decoded from each DP centre), the topic hierarchy, lineages
and synthetic exemplars. Post-processing of the
DP outputs: no budget.

The job (beam_jobs/insights.py) runs it on Beam, the in-process evaluation (eval/urania_inprocess.py)
on plain values: on Beam `labels` is a PCollection of (cluster_id, (keywords, source, voted category))
and the kept clusters' sizes and ids (KeptClusters) and DP k-means' outputs are PCollections; in-process
they are a dict, the same dict, a list, and a DPKMeansOutput of arrays.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from backends.interfaces import ClusterNamer, ExemplarWriter
from backends.readable_names import readable_namer
from config.exemplars import ExemplarParams
from publishing.previous_nights import PreviousNights
from transforms.decode_centres import DecodeCentres, DecoderSettings
from transforms.dp_cluster_sizes import KeptClusters
from transforms.dp_kmeans import DPKMeansOutput
from transforms.name_clusters import NameClusters
from transforms.topic_hierarchy import BuildTopicHierarchy
from transforms.topic_keywords import PublicKeywords
from transforms.topic_lineage import AssignLineages
from transforms.write_exemplars import WriteExemplars


@dataclasses.dataclass(frozen=True)
class ReleasedTopics:
    """`topics`: (cluster_id, named topic, with its exemplars); `hierarchy` and `lineage`: singletons
    (transforms/topic_hierarchy.py, transforms/topic_lineage.py)."""

    topics: Any
    hierarchy: Any
    lineage: Any


@dataclasses.dataclass(frozen=True)
class ReleaseSettings:
    """What the release writes with besides K: `namer` (every topic and group name), `new_lineage_prefix`
    (the new lineages' ids), `exemplars` (the job's group: --exemplars_per_topic 0, no exemplars; else
    `exemplar_writer` writes them) and `decoder` (--centre_decoder; None: no decoded names)."""

    namer: ClusterNamer
    new_lineage_prefix: str
    exemplars: ExemplarParams
    exemplar_writer: ExemplarWriter | None = None
    decoder: DecoderSettings | None = None


def release_topics(engine, labels, kept: KeptClusters, kmeans: DPKMeansOutput, public: PublicKeywords,
                   settings: ReleaseSettings, previous: PreviousNights) -> ReleasedTopics:
    """Names, hierarchy, lineages and exemplars of the kept topics. `kept`: the kept clusters' noisy
    sizes and ids; `kmeans`: DP k-means' centres, basis and active dimension. Every text here is embedded
    by the run's one encoder (`public.encoder`). `settings.decoder` (--centre_decoder): each name and
    description decoded from its DP centre, before the hierarchy and exemplars read them; `public.keywords`:
    the public K, whose categories gate a decoded name (transforms/decode_centres.py). `previous`: the
    earlier nights the lineages continue. Every name `settings.namer` writes (topics and groups) and every
    decoded name passes the readability gate (backends/readable_names.py); a name that fails falls back to
    the vote name."""
    encoder, categories, exemplars, decoder = public.encoder, public.categories, settings.exemplars, settings.decoder
    # Every name a namer writes passes the readability gate, else falls back to the vote name.
    namer = readable_namer(settings.namer, categories, encoder)
    named = engine.apply("name clusters", NameClusters(namer, categories), labels)
    if decoder is not None:
        named = engine.apply("decode DP centres", DecodeCentres(decoder, encoder, public.keywords, categories,
                                                               kmeans.centres, kmeans.basis, kmeans.active_dim), named)
    hierarchy = engine.apply("topic hierarchy", BuildTopicHierarchy(kept.sizes, kmeans.centres, categories, namer),
                             named)
    # The lineages record the model's name beside the centres (which space they are in): no text is embedded.
    lineage = engine.apply("topic lineages", AssignLineages(kmeans.basis, kept.ids, previous,
                                                            settings.new_lineage_prefix, encoder.model), kmeans.centres)
    if exemplars.exemplars_per_topic:
        named = engine.apply("synthetic exemplars", WriteExemplars(
            settings.exemplar_writer, encoder, exemplars.exemplars_per_topic, exemplars.exemplar_candidates,
            exemplars.exemplar_rounds, kmeans.centres, kmeans.basis, kmeans.active_dim), named)
    return ReleasedTopics(named, hierarchy, lineage)
