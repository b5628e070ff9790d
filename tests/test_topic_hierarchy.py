"""The report's topic hierarchy: ~sqrt(k) groups of released topics, named through the ClusterNamer."""

import apache_beam as beam
import numpy as np
import pytest

from backends import embedding
from backends.interfaces import ClusterNamer
from backends.offline import KeywordClusterNamer
from core.report import report_topics
from tests.conftest import local_pipeline
from tests.report_fixtures import THEME_OF_KEYWORD, THEMES, theme_embed, themed_topics
from transforms.topic_hierarchy import (
    BuildTopicHierarchy,
    build_hierarchy,
    group_keywords,
    number_of_groups,
    topic_vectors,
)


def _themes_of(group, topics):
    by_id = {t["id"]: t for t in topics}
    return {THEME_OF_KEYWORD[by_id[i]["keywords"][0]] for i in group["topic_ids"]}


def test_groups_follow_the_themes_and_partition_the_topics():
    topics = themed_topics()
    hierarchy = build_hierarchy(topics, theme_embed, KeywordClusterNamer())
    groups = hierarchy["groups"]
    assert len(groups) == number_of_groups(9) == 3
    assert sorted(i for g in groups for i in g["topic_ids"]) == sorted(t["id"] for t in topics)
    assert all(len(_themes_of(g, topics)) == 1 for g in groups)
    sizes = {t["id"]: t["size"] for t in topics}
    assert all(g["size"] == sum(sizes[i] for i in g["topic_ids"]) for g in groups)
    assert [g["size"] for g in groups] == sorted((g["size"] for g in groups), reverse=True)
    assert "no privacy budget" in hierarchy["method"]


def test_group_names_come_from_member_keywords_through_the_namer():
    class RecordingNamer(ClusterNamer):
        def __init__(self):
            self.calls = []

        def name(self, keywords):
            return "unused", "unused"

        def name_group(self, keywords, member_names):
            self.calls.append((list(keywords), list(member_names)))
            return f"group of {len(member_names)}", "described"

    topics = themed_topics()
    namer = RecordingNamer()
    groups = build_hierarchy(topics, theme_embed, namer)["groups"]
    assert len(namer.calls) == 3 and {g["name"] for g in groups} == {"group of 3"}
    released_keywords = {k for t in topics for k in t["keywords"]}
    released_names = {t["name"] for t in topics}
    for keywords, member_names in namer.calls:
        assert set(keywords) <= released_keywords and set(member_names) <= released_names
    # The default ClusterNamer.name_group names a group like a topic, from its keywords.
    default_groups = build_hierarchy(topics, theme_embed, KeywordClusterNamer())["groups"]
    assert all(g["name"] == KeywordClusterNamer().name(g["keywords"])[0] for g in default_groups)


def test_group_keywords_are_weighted_by_member_sizes():
    members = [{"keywords": ["a", "b"], "size": 10}, {"keywords": ["c", "b"], "size": 100}]
    assert group_keywords(members) == ["c", "b", "a"]


def test_hierarchy_is_deterministic_and_handles_small_and_degenerate_inputs():
    topics = themed_topics()
    assert build_hierarchy(topics, theme_embed, KeywordClusterNamer()) == build_hierarchy(
        list(reversed(topics)), theme_embed, KeywordClusterNamer())
    assert build_hierarchy([], theme_embed, KeywordClusterNamer())["groups"] == []
    one = build_hierarchy(topics[:1], theme_embed, KeywordClusterNamer())["groups"]
    assert len(one) == 1 and one[0]["topic_ids"] == [topics[0]["id"]]
    # Identical topics (e.g. several "Unlabelled topic"s) cannot be split: one group, no crash.
    unlabelled = [{"id": i, "name": "Unlabelled topic", "description": "", "keywords": [], "size": 30 + i}
                  for i in range(5)]
    groups = build_hierarchy(unlabelled, theme_embed, KeywordClusterNamer())["groups"]
    assert len(groups) == 1 and groups[0]["name"] == "Unlabelled topic"
    assert [number_of_groups(k) for k in (0, 1, 2, 3, 9, 30, 50)] == [0, 1, 1, 2, 3, 5, 7]


def test_topic_vectors_average_name_and_keywords():
    vectors = topic_vectors([{"name": "Fever", "keywords": ["fever", "python"]}], theme_embed)
    assert vectors.shape == (1, 4) and np.linalg.norm(vectors[0]) == pytest.approx(1.0)
    assert vectors[0, 2] > vectors[0, 0] > 0  # health (name and one keyword) outweighs code (one keyword)


@pytest.mark.slow
def test_real_embedding_model_groups_related_topics():
    from backends.embedding import embed_texts
    topics = themed_topics()
    groups = build_hierarchy(topics, lambda texts: embed_texts("all-MiniLM-L6-v2", texts),
                             KeywordClusterNamer())["groups"]
    assert len(groups) == 3
    assert sorted(tuple(sorted(_themes_of(g, topics))) for g in groups) == [(t,) for t in sorted(THEMES)]


def test_the_stage_builds_the_hierarchy_of_the_report_topics_from_named_topics_and_noisy_sizes(collector,
                                                                                              monkeypatch):
    # The in-process runner runs the stage here, so the stand-in embedding reaches it.
    monkeypatch.setattr(embedding, "embed_texts", lambda model, texts: theme_embed(texts))
    topics = themed_topics()
    named = [(t["id"], {"name": t["name"], "description": "", "keywords": t["keywords"]}) for t in topics]
    sizes = [(t["id"], t["size"] + 0.3) for t in topics]
    with local_pipeline() as pipeline:
        kept_sizes = pipeline | "sizes" >> beam.Create(sizes)
        for name, rows in (("all", named), ("none", [])):
            topics_in = pipeline | f"named {name}" >> beam.Create(rows)
            collector(topics_in | f"hierarchy {name}" >> BuildTopicHierarchy(kept_sizes, "any model",
                                                                             KeywordClusterNamer()), name)
    (hierarchy,) = collector.result("all")
    assert hierarchy == build_hierarchy(report_topics(dict(named), dict(sizes)), theme_embed, KeywordClusterNamer())
    assert len(hierarchy["groups"]) == 3
    assert collector.result("none") == [{"method": hierarchy["method"], "groups": []}]
