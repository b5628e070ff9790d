"""The report's topic hierarchy: topics grouped by their keywords' categories, not by their DP centres
(k-means on the centres only when there are no categories at all)."""

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from backends.interfaces import ClusterNamer
from backends.keyword_categories import KeywordCategories
from backends.label_evidence import APPROXIMATE, UNVERIFIED, UNVERIFIED_GROUP, VOTED
from backends.offline import KeywordClusterNamer
from publishing.report import report_topics
from tests.conftest import checked, local_pipeline
from tests.support.report_fixtures import THEME_OF_KEYWORD, THEMES, theme_centres, theme_embed, themed_topics
from transforms.topic_hierarchy import (
    METHOD,
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


class RecordingNamer(ClusterNamer):
    def __init__(self):
        self.calls = []

    def name(self, keywords):
        return "unused", "unused"

    def name_group(self, keywords, member_names):
        self.calls.append((list(keywords), list(member_names)))
        return f"group of {len(member_names)}", "described"


def test_topics_without_a_category_form_their_own_group_and_are_not_placed_by_their_centres():
    topics = themed_topics()
    centres = theme_centres(topics)
    health = [t["id"] for t in topics if THEME_OF_KEYWORD[t["keywords"][0]] == "health"]
    unlabelled = [{"id": 9, "name": "Unlabelled topic", "description": "", "keywords": [], "size": 900},
                  {"id": 10, "name": "Misc: pets", "description": "", "keywords": ["pets", "aquarium"], "size": 30}]
    # Their centres are exactly the health group's mean centre: the old rule put them there.
    rows = np.tile(centres[health].mean(axis=0), (2, 1))
    namer = RecordingNamer()
    groups = build_hierarchy(topics + unlabelled, np.vstack([centres, rows]), THEME_OF_KEYWORD, namer)["groups"]
    by_ids = {tuple(g["topic_ids"]): g for g in groups}
    assert (9, 10) in by_ids and by_ids[(9, 10)]["name"] == "group of 2"  # named by the namer, largest first
    assert namer.calls == [(["pets", "aquarium"], ["Unlabelled topic", "Misc: pets"])]
    assert sorted(g["name"] for g in groups) == sorted([*THEMES, "group of 2"])
    assert all(_themes_of(g, topics) == {g["name"]} for g in groups if g["name"] in THEMES)
    assert groups[0]["topic_ids"] == [9, 10]  # still sorted by size
    assert all("nearest" not in g["description"] for g in groups)


def test_a_topic_alone_in_its_category_keeps_a_group_of_its_own():
    topics = themed_topics()
    category_of = dict(THEME_OF_KEYWORD, fever="rare")  # one health topic alone in "rare"
    lone = next(t["id"] for t in topics if t["keywords"][0] == "fever")
    groups = {g["name"]: g for g in _hierarchy(topics, category_of)["groups"]}
    assert groups["rare"]["topic_ids"] == [lone] and lone not in groups["health"]["topic_ids"]
    assert groups["rare"]["description"] == (
        "Topics about rare, most often fever. Its one topic's votes or keywords place it in this category.")
    assert len(groups["health"]["topic_ids"]) == 2
    assert "All of its 2 topics' votes or keywords place them in this category." in groups["health"]["description"]


def test_an_unverified_topic_goes_to_the_unverified_group_never_to_its_sensitive_category():
    category_of = dict(THEME_OF_KEYWORD, **{"money laundering": "Crime and fraud", "fraud": "Crime and fraud",
                                            "scam": "Crime and fraud"})
    topics = themed_topics()
    crime = {"id": 9, "name": "Crime and fraud: fraud and scam", "description": "", "size": 200,
             "keywords": ["fraud", "scam"], "label_evidence": VOTED}
    guessed = [{"id": 10, "name": "Possibly crime and fraud (unverified)", "description": "", "size": 300,
                "keywords": ["money laundering", "scam"], "label_evidence": UNVERIFIED},
               {"id": 11, "name": "Possibly crime and fraud (unverified)", "description": "", "size": 20,
                "keywords": ["fraud", "python"], "label_evidence": UNVERIFIED}]
    approximate = {"id": 12, "name": "Code: sql (approximate)", "description": "", "size": 10,
                   "keywords": ["sql"], "label_evidence": APPROXIMATE}
    everything = topics + [crime, *guessed, approximate]
    centres = theme_centres(everything)
    centres[10] = centres[11] = centres[9]  # as close to the crime group as can be
    groups = {g["name"]: g for g in build_hierarchy(everything, centres, category_of, NAMER)["groups"]}
    assert groups[UNVERIFIED_GROUP]["topic_ids"] == [10, 11]
    assert groups["Crime and fraud"]["topic_ids"] == [9]  # a voted topic may sit in a sensitive category
    assert 12 in groups["code"]["topic_ids"]
    assert groups[UNVERIFIED_GROUP]["keywords"] == []  # its members' keywords are a sensitive guess
    assert groups["Crime and fraud"]["keywords"] == ["fraud", "scam"]
    description = groups[UNVERIFIED_GROUP]["description"]
    assert "DP centres" in description and "sensitive category" in description and "no votes" in description
    assert UNVERIFIED_GROUP in METHOD
    # Topics from older code carry no label_evidence: they go by their category.
    old = [{k: v for k, v in t.items() if k != "label_evidence"} for t in everything]
    groups = {g["name"]: g["topic_ids"] for g in build_hierarchy(old, centres, category_of, NAMER)["groups"]}
    assert UNVERIFIED_GROUP not in groups and groups["Crime and fraud"] == [10, 9, 11]


def test_group_names_are_categories_and_descriptions_list_their_top_keywords():
    topics = themed_topics()
    for group in _hierarchy(topics)["groups"]:
        assert group["keywords"] == group_keywords([t for t in topics if t["id"] in group["topic_ids"]])
        assert group["description"].startswith(f"Topics about {group['name']}, most often ")
        assert group["keywords"][0] in group["description"]
        assert "All of its 3 topics' votes or keywords place them in this category." in group["description"]


def test_without_categories_topics_are_grouped_by_their_centres_and_named_through_the_namer():
    topics = themed_topics()
    namer = RecordingNamer()
    groups = _hierarchy(topics, category_of={}, namer=namer)["groups"]
    assert len(groups) == number_of_groups(9) == 3 and all(len(_themes_of(g, topics)) == 1 for g in groups)
    assert len(namer.calls) == 3 and {g["name"] for g in groups} == {"group of 3"}
    released_keywords = {k for t in topics for k in t["keywords"]}
    for keywords, member_names in namer.calls:
        assert set(keywords) <= released_keywords and set(member_names) <= {t["name"] for t in topics}


def test_a_night_whose_topics_have_no_category_is_one_group_not_grouped_by_centres():
    # The keyword set has categories, tonight's topics none of them (all unlabelled): one group, named
    # by the namer, whatever the centres say.
    topics = [{**t, "keywords": []} for t in themed_topics()]
    groups = _hierarchy(topics, category_of={"unused": "Some category"}, namer=RecordingNamer())["groups"]
    assert len(groups) == 1 and sorted(groups[0]["topic_ids"]) == sorted(t["id"] for t in topics)


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


def test_the_stage_builds_the_hierarchy_of_the_report_topics_from_named_topics_sizes_and_centres():
    topics = themed_topics()
    centres = theme_centres(topics)
    named = [(t["id"], {"name": t["name"], "description": "", "keywords": t["keywords"]}) for t in topics]
    named[-1][1]["label_evidence"] = UNVERIFIED  # report_topics carries it to the grouping
    sizes = [(t["id"], t["size"] + 0.3) for t in topics]
    categories = KeywordCategories(THEME_OF_KEYWORD)
    released = [{**t, "label_evidence": dict(named)[t["id"]].get("label_evidence", VOTED)}
                for t in report_topics(dict(named), dict(sizes))]
    expected = build_hierarchy(released, centres, THEME_OF_KEYWORD, NAMER)

    def the_report_topics_hierarchy(hierarchies):
        (hierarchy,) = hierarchies
        assert hierarchy == expected
        assert len(hierarchy["groups"]) == 4
        assert [g["topic_ids"] for g in hierarchy["groups"] if g["name"] == UNVERIFIED_GROUP] == [[named[-1][0]]]

    with local_pipeline() as pipeline:
        kept_sizes = pipeline | "sizes" >> beam.Create(sizes)
        released_centres = pipeline | "centres" >> beam.Create([centres])
        hierarchies = {}
        for name, rows in (("all", named), ("none", [])):
            topics_in = pipeline | f"named {name}" >> beam.Create(rows)
            hierarchies[name] = topics_in | f"hierarchy {name}" >> BuildTopicHierarchy(kept_sizes, released_centres,
                                                                                       categories, NAMER)
        assert_that(hierarchies["all"], checked(the_report_topics_hierarchy), label="all")
        # no topics: the same method (the one the full hierarchy states, as checked above), no groups
        assert_that(hierarchies["none"], equal_to([{"method": expected["method"], "groups": []}]), label="none")
