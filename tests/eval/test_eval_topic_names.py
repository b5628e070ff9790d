"""eval/utility/topic_names.py: group purity on planted themes, names that join two themes, the baseline names."""

import pytest

from eval.utility.topic_names import hierarchy_purity, joins_two_themes, name_figures, planted_topic_of_cluster, previous_name
from synthetic.topics import PLANTED_TOPICS

THEME = {t.name: t.theme for t in PLANTED_TOPICS}
SOFTWARE = [t.name for t in PLANTED_TOPICS if t.theme == "software"]
HEALTH = [t.name for t in PLANTED_TOPICS if t.theme == "health"]


def _report(groups, sizes):
    return {"topics": [{"id": i, "name": f"t{i}", "keywords": [], "size": s} for i, s in sizes.items()],
            "hierarchy": {"groups": [{"name": f"g{n}", "topic_ids": ids} for n, ids in enumerate(groups)]}}


def test_hierarchy_purity_is_the_size_weighted_share_of_topics_in_their_groups_majority_theme():
    planted = {0: SOFTWARE[0], 1: SOFTWARE[1], 2: HEALTH[0], 3: HEALTH[1], 4: HEALTH[2]}
    pure = hierarchy_purity(_report([[0, 1], [2, 3, 4]], {0: 10, 1: 30, 2: 5, 3: 5, 4: 50}), planted)
    assert pure["purity"] == 1.0 and pure["groups"] == 2
    # Topic 2 (health, 5) in the software group: that group is 40/45 software; overall 95/100.
    mixed = hierarchy_purity(_report([[0, 1, 2], [3, 4]], {0: 10, 1: 30, 2: 5, 3: 5, 4: 50}), planted)
    assert mixed["purity"] == pytest.approx(95 / 100)
    # One group holding everything: its majority theme's share.
    assert hierarchy_purity(_report([[0, 1, 2, 3, 4]], {0: 10, 1: 30, 2: 5, 3: 5, 4: 50}), planted)["purity"] == 0.6


def test_a_clusters_planted_topic_is_the_majority_of_its_conversations():
    assignments = {"a": 0, "b": 0, "c": 0, "d": 1}
    planted = {"a": "x", "b": "y", "c": "y", "d": "x"}
    assert planted_topic_of_cluster(assignments, planted) == {0: "y", 1: "x"}


def test_a_name_joins_two_themes_only_with_keywords_of_disjoint_planted_themes_in_the_name():
    joined = {"name": "Python, fever and symptoms", "keywords": ["python", "fever", "symptoms"]}
    one_theme = {"name": "Health: fever and symptoms", "keywords": ["fever", "symptoms", "python"]}
    assert joins_two_themes(joined) and not joins_two_themes(one_theme)
    assert name_figures({"topics": [joined, one_theme, dict(one_theme)]}) == {
        "topics": 3, "joining_names": 1, "duplicate_names": 2, "longest_name_words": 4}


def test_the_baseline_name_joins_the_top_keywords():
    assert previous_name(["sql", "postgresql", "vegetables"]) == "Sql, postgresql and vegetables"
    assert previous_name([]) == "Unlabelled topic"
