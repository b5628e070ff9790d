"""The report's topic hierarchy: topics grouped by their keywords' categories and their DP centres."""

import apache_beam as beam
import numpy as np
import pytest

from backends.interfaces import ClusterNamer
from backends.keyword_categories import KeywordCategories
from backends.offline import KeywordClusterNamer
from core.report import report_topics
from tests.conftest import local_pipeline
from tests.report_fixtures import THEME_OF_KEYWORD, THEMES, theme_centres, theme_embed, themed_topics
from transforms.topic_hierarchy import (
    BuildTopicHierarchy,
    build_hierarchy,
    group_keywords,
    number_of_groups,
    topic_vectors,
)

NAMER = KeywordClusterNamer()


def _themes_of(group, topics):
    by_id = {t["id"]: t for t in topics}
    return {THEME_OF_KEYWORD[by_id[i]["keywords"][0]] for i in group["topic_ids"]}


def _hierarchy(topics, category_of=THEME_OF_KEYWORD, namer=NAMER, **kwargs):
    return build_hierarchy(topics, theme_centres(topics), category_of, namer, **kwargs)


def test_a_topics_group_is_the_dominant_category_of_its_keywords():
    topics = themed_topics()
    groups = _hierarchy(topics)["groups"]
    assert sorted(g["name"] for g in groups) == sorted(THEMES)
    assert all(_themes_of(g, topics) == {g["name"]} for g in groups)
    assert sorted(i for g in groups for i in g["topic_ids"]) == sorted(t["id"] for t in topics)
    sizes = {t["id"]: t["size"] for t in topics}
    assert all(g["size"] == sum(sizes[i] for i in g["topic_ids"]) for g in groups)
    assert [g["size"] for g in groups] == sorted((g["size"] for g in groups), reverse=True)
    assert "no privacy budget" in _hierarchy(topics)["method"]


def test_a_mixed_topic_goes_by_its_best_ranked_category_not_by_its_first_keyword_alone():
    topics = themed_topics()
    topics.append({"id": 9, "name": "", "description": "", "size": 5,
                   "keywords": ["fever", "python", "unit testing", "error message"]})  # code 1/2+1/3+1/4 > 1
    groups = {g["name"]: g["topic_ids"] for g in _hierarchy(topics)["groups"]}
    assert 9 in groups["code"]


def test_topics_without_keywords_join_the_group_with_the_nearest_centres():
    topics = themed_topics()
    centres = theme_centres(topics)
    unlabelled = [{"id": 9, "name": "Unlabelled topic", "description": "", "keywords": [], "size": 40},
                  {"id": 10, "name": "Unlabelled topic (2)", "description": "", "keywords": [], "size": 30}]
    rows = np.zeros((2, centres.shape[1]))
    rows[0, 2], rows[1, 0] = 1.0, 1.0  # near health's centres, and near code's
    groups = build_hierarchy(topics + unlabelled, np.vstack([centres, rows]), THEME_OF_KEYWORD, NAMER)["groups"]
    by_name = {g["name"]: g for g in groups}
    assert 9 in by_name["health"]["topic_ids"] and 10 in by_name["code"]["topic_ids"]
    assert by_name["health"]["description"].endswith(
        "3 of its 4 topics have keywords mostly in this category; the other joined it by the nearest DP cluster centres.")
    assert "3 of its 4 topics have keywords mostly in this category" in by_name["code"]["description"]


def test_groups_smaller_than_the_minimum_merge_into_the_group_with_the_nearest_centres():
    topics = themed_topics()
    category_of = dict(THEME_OF_KEYWORD, fever="rare")  # one health topic alone in "rare"
    lone = next(t["id"] for t in topics if t["keywords"][0] == "fever")
    groups = {g["name"]: g["topic_ids"] for g in _hierarchy(topics, category_of)["groups"]}
    assert "rare" not in groups and lone in groups["health"]
    kept = {g["name"]: g["topic_ids"] for g in _hierarchy(topics, category_of, min_group_topics=1)["groups"]}
    assert kept["rare"] == [lone]


def test_group_names_are_categories_and_descriptions_list_their_top_keywords():
    topics = themed_topics()
    for group in _hierarchy(topics)["groups"]:
        assert group["keywords"] == group_keywords([t for t in topics if t["id"] in group["topic_ids"]])
        assert group["description"].startswith(f"Topics about {group['name']}, most often ")
        assert group["keywords"][0] in group["description"]
        assert "All of its 3 topics have keywords mostly in this category." in group["description"]


def test_without_categories_topics_are_grouped_by_their_centres_and_named_through_the_namer():
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
    groups = _hierarchy(topics, category_of={}, namer=namer)["groups"]
    assert len(groups) == number_of_groups(9) == 3 and all(len(_themes_of(g, topics)) == 1 for g in groups)
    assert len(namer.calls) == 3 and {g["name"] for g in groups} == {"group of 3"}
    released_keywords = {k for t in topics for k in t["keywords"]}
    for keywords, member_names in namer.calls:
        assert set(keywords) <= released_keywords and set(member_names) <= {t["name"] for t in topics}


def test_group_keywords_are_weighted_by_member_sizes():
    members = [{"keywords": ["a", "b"], "size": 10}, {"keywords": ["c", "b"], "size": 100}]
    assert group_keywords(members) == ["c", "b", "a"]


def test_hierarchy_is_deterministic_and_handles_small_and_degenerate_inputs():
    topics = themed_topics()
    centres = theme_centres(topics)
    for category_of in (THEME_OF_KEYWORD, {}):
        assert build_hierarchy(topics, centres, category_of, NAMER) == build_hierarchy(
            list(reversed(topics)), centres, category_of, NAMER)
    assert build_hierarchy([], centres, THEME_OF_KEYWORD, NAMER)["groups"] == []
    one = _hierarchy(topics[:1])["groups"]
    assert len(one) == 1 and one[0]["topic_ids"] == [topics[0]["id"]]
    # Only topics without keywords, and no categories: grouped by their centres, no crash.
    unlabelled = [{"id": i, "name": "Unlabelled topic", "description": "", "keywords": [], "size": 30 + i}
                  for i in range(5)]
    groups = build_hierarchy(unlabelled, np.tile(np.eye(1, 4), (5, 1)), THEME_OF_KEYWORD, NAMER)["groups"]
    assert len(groups) == 1 and groups[0]["name"] == "Unlabelled topic"
    assert [number_of_groups(k) for k in (0, 1, 2, 3, 9, 30, 50)] == [0, 1, 1, 2, 3, 5, 7]


def test_topic_vectors_average_name_and_keywords():
    vectors = topic_vectors([{"name": "Fever", "keywords": ["fever", "python"]}], theme_embed)
    assert vectors.shape == (1, 4) and np.linalg.norm(vectors[0]) == pytest.approx(1.0)
    assert vectors[0, 2] > vectors[0, 0] > 0  # health (name and one keyword) outweighs code (one keyword)


def test_the_stage_builds_the_hierarchy_of_the_report_topics_from_named_topics_sizes_and_centres(collector):
    topics = themed_topics()
    centres = theme_centres(topics)
    named = [(t["id"], {"name": t["name"], "description": "", "keywords": t["keywords"]}) for t in topics]
    sizes = [(t["id"], t["size"] + 0.3) for t in topics]
    categories = KeywordCategories(THEME_OF_KEYWORD)
    with local_pipeline() as pipeline:
        kept_sizes = pipeline | "sizes" >> beam.Create(sizes)
        released_centres = pipeline | "centres" >> beam.Create([centres])
        for name, rows in (("all", named), ("none", [])):
            topics_in = pipeline | f"named {name}" >> beam.Create(rows)
            collector(topics_in | f"hierarchy {name}" >> BuildTopicHierarchy(kept_sizes, released_centres,
                                                                             categories, NAMER), name)
    (hierarchy,) = collector.result("all")
    assert hierarchy == build_hierarchy(report_topics(dict(named), dict(sizes)), centres, THEME_OF_KEYWORD, NAMER)
    assert len(hierarchy["groups"]) == 3
    assert collector.result("none") == [{"method": hierarchy["method"], "groups": []}]
