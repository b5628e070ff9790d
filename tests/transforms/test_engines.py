"""The stages wired once for both engines (transforms/engine.py): the job's Beam engine and the
in-process evaluation's local engine give the same released topics from the same DP outputs."""

import apache_beam as beam
import numpy as np
import pytest

from backends.embedding import DEFAULT_EMBEDDING_MODEL, embed_texts
from backends.keyword_categories import KeywordCategories
from backends.keyword_set import load_keyword_set
from backends.offline import KeywordClusterNamer
from backends.offline_exemplars import TemplateExemplarWriter
from config.embedding import EmbeddingParams
from config.exemplars import ExemplarParams
from core.label_sources import CENTROID_SOURCE
from core.records import ConversationBlock
from publishing.lineage import centres_section
from publishing.previous_nights import PreviousNights
from tests.conftest import assert_together, check_dp_stage, local_pipeline
from tests.support.release_snapshot import pipeline_dp_reproducible
from transforms.dp_cluster_sizes import KeptClusters, cluster_size_params
from transforms.dp_count import DPCountPerPartition
from transforms.dp_kmeans import DPKMeansOutput
from transforms.engine import BeamEngine, LocalEngine, WithPrivate
from transforms.topic_keywords import PublicKeywords
from transforms.topic_release import ReleaseSettings, release_topics

MODEL = DEFAULT_EMBEDDING_MODEL
EMBEDDING = EmbeddingParams(embedding_model=MODEL, embedding_backend="torch", embedding_device="cpu")


def _inputs():
    """Five topics labelled by keywords of the bundled set, each centred on its keywords' embedding;
    one centre of a previous night near topic 1, so that one lineage continues."""
    keyword_set = load_keyword_set(None)
    keywords = keyword_set.keywords
    labels = {c: ([keywords[7 * c], keywords[7 * c + 1]], CENTROID_SOURCE, None) for c in range(5)}
    labels[3] = (labels[2][0], CENTROID_SOURCE, None)  # two topics of one name: made distinct
    centres = embed_texts(MODEL, [" ".join(k) + f" {c}" for c, (k, _, _) in sorted(labels.items())])
    sizes = {0: 40.2, 1: 12.7, 2: 30.0, 3: 8.4, 4: 22.9}
    previous = PreviousNights.of([{"topics": [{"id": 0, "lineage": "2026-11-01#0", "size": 9, "name": "t",
                                               "keywords": []}],
                                   "config": {"date": "2026-11-01"},
                                   "centres": centres_section({0: centres[1]}, MODEL)}], MODEL, False, centres.shape[1])
    categories = KeywordCategories.of_keyword_set(keyword_set, MODEL)
    exemplars = ExemplarParams(exemplars_per_topic=1, exemplar_candidates=4, exemplar_rounds=1)
    return labels, centres, sizes, previous, categories, exemplars


def beam_release_inputs(pipeline, centres, sizes: dict):
    """The kept sizes and DP k-means' outputs (no basis) as release_topics reads them on Beam."""
    def singleton(label, value):
        return pipeline | label >> beam.Create([value])

    kept_sizes = pipeline | "sizes" >> beam.Create(sorted(sizes.items()))
    return kept_sizes, DPKMeansOutput(singleton("centres", centres), None, singleton("basis", None),
                                      singleton("dim", centres.shape[1]))


def test_released_topics_are_the_same_on_beam_and_in_process():
    labels, centres, sizes, previous, categories, exemplars = _inputs()
    local = LocalEngine()
    public = PublicKeywords((), categories, None, EMBEDDING.encoder)
    settings = ReleaseSettings(KeywordClusterNamer(categories), "2026-11-02", exemplars, TemplateExemplarWriter())
    expected = release_topics(local, labels, KeptClusters(sizes, list(sizes)),
                              DPKMeansOutput(centres, None, None, centres.shape[1]), public, settings, previous)
    assert len({t["name"] for t in expected.topics.values()}) == 5  # names made distinct
    assert expected.lineage["lineages"][1] == "2026-11-01#0"  # the previous night's lineage continues
    assert all(len(t["exemplars"]) == 1 for t in expected.topics.values())
    assert sorted(local.private["exemplar_evolutions"]) == list(range(5))

    with local_pipeline() as pipeline:
        kept_sizes, kmeans = beam_release_inputs(pipeline, centres, sizes)
        released = release_topics(BeamEngine(), pipeline | "labels" >> beam.Create(sorted(labels.items())),
                                  KeptClusters(kept_sizes, kept_sizes | "ids" >> beam.Keys()), kmeans, public, settings,
                                  previous)

        def same_as_in_process(topics, hierarchy, lineage):
            assert dict(topics) == expected.topics
            assert hierarchy == [expected.hierarchy]
            assert lineage == [expected.lineage]

        assert_together(same_as_in_process, "compare", topics=released.topics, hierarchy=released.hierarchy,
                        lineage=released.lineage)


class _Doubles(beam.PTransform):
    def local(self, values):
        return WithPrivate([2 * v for v in values], {"doubled": len(values)})

    def expand(self, values):
        return values | beam.Map(lambda v: 2 * v)


def test_the_local_engine_keeps_private_by_products_and_returns_the_value():
    engine = LocalEngine()
    assert engine.apply("double", _Doubles(), [1, 2]) == [2, 4]
    assert engine.private == {"doubled": 2}
    with pytest.raises(AttributeError):
        engine.apply("no local form", beam.Map(lambda v: v), [1])


@pytest.mark.parametrize("pairs", [[("u1", 0), ("u1", 0), ("u2", 1), ("u3", 1), ("u3", 7)], []])
def test_a_dp_count_is_the_same_on_beam_and_in_process(pairs):
    """PipelineDP's own engine on its LocalBackend and its BeamBackend (noise and sampling fixed by the
    release snapshot's hook): the same counts for every public partition, the same spend."""
    params = cluster_size_params(1.0, max_conversations_per_user=2)
    with pipeline_dp_reproducible():
        local_stage = DPCountPerPartition(params, [0, 1, 2], "count", budget=None)
        local = LocalEngine().apply("count", local_stage, pairs)
        assert local == {0: 2.0, 1: 2.0, 2: 0.0} if pairs else {0: 0.0, 1: 0.0, 2: 0.0}
        beam_stage = DPCountPerPartition(params, [0, 1, 2], "count", budget=None)

        def same_as_in_process(counts, spend):
            assert dict(counts) == local
            assert spend.epsilon == pytest.approx(local_stage.spend.epsilon)
            assert spend.noise == local_stage.spend.noise

        check_dp_stage(beam_stage, pairs, same_as_in_process)


@pytest.mark.e2e
def test_the_topic_stages_release_the_same_on_beam_and_in_process(tmp_path):
    """The whole wiring (transforms/topic_stages.py) on both engines, from one block of generated
    conversations, with the job's calibration and seeded noise (PipelineDP's fixed by the snapshot hook):
    the same kept sizes, labels, topics, hierarchy, lineages and spends."""
    from dp_ops.run_budget import RunBudget
    from eval.data import bound_contributions, embed_cached, load_dataset
    from eval.urania_inprocess import UraniaConfig, joint_calibration, topic_plan
    from synthetic.sample import write_sample
    from transforms.topic_stages import topic_stages

    path = str(tmp_path / "conversations.jsonl")
    write_sample(path, 300, 120, seed=2)
    data = load_dataset(path)
    config = UraniaConfig(num_clusters=6, min_cluster_size=5, exemplars_per_topic=1, themes=True,
                          facets="language,request_kind,concern")
    kept, weights = bound_contributions(data.user_ids, data.conversation_ids, config.max_conversations_per_user, 3)
    embeddings = embed_cached(data.facets, cache_dir=None)
    block = ConversationBlock([data.conversation_ids[i] for i in kept], [data.user_ids[i] for i in kept], weights,
                              [data.facets[i] for i in kept], embeddings[kept])
    plan = topic_plan(config, joint_calibration(config), embeddings.shape[1], 3, 4, None, "2026-11-02", [])
    with pipeline_dp_reproducible():
        local_budget = RunBudget(config.delta)
        local = topic_stages(LocalEngine(), [block], plan, local_budget)
        assert len(local.kept_sizes) >= 3 and all(t["exemplars"] for t in local.released.topics.values())
        with local_pipeline() as pipeline:
            beam_budget = RunBudget(config.delta)
            stages = topic_stages(BeamEngine(), pipeline | beam.Create([block]), plan, beam_budget)
            assert [e.stage for e in beam_budget.entries] == [e.stage for e in local_budget.entries]
            assert beam_budget.composition() == local_budget.composition()

            def same_as_in_process(kept_sizes, labels, topics, hierarchy, lineage, centres, themes, facets):
                np.testing.assert_array_equal(centres[0], local.kmeans.centres)
                assert themes == [local.themes.section] and len(themes[0]["themes"]) > 20
                assert facets == [local.facets.section] and list(facets[0]) == ["language", "request_kind", "concern"]
                assert set(facets[0]["language"]["by_topic"]) == {str(c) for c in local.kept_sizes}
                assert dict(kept_sizes) == local.kept_sizes
                assert dict(labels) == local.keywords.labels
                assert dict(topics) == local.released.topics
                assert hierarchy == [local.released.hierarchy] and lineage == [local.released.lineage]

            assert_together(same_as_in_process, "compare", kept_sizes=stages.kept_sizes,
                            labels=stages.keywords.labels, topics=stages.released.topics,
                            hierarchy=stages.released.hierarchy, lineage=stages.released.lineage,
                            centres=stages.kmeans.centres, themes=stages.themes.section,
                            facets=stages.facets.section)
