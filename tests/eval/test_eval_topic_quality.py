"""eval/utility/topic_quality.py's metrics on tiny hand-made inputs with known answers."""

import collections

import pytest

from eval.utility import topic_quality as tq

EXPECTED = {"python debugging": ("python", "debugging", "error message"),
            "sql databases": ("sql", "database", "postgresql"),
            "gardening": ("gardening", "composting")}
THEMES = {"python debugging": "software", "sql databases": "software", "gardening": "home and daily life"}


def test_nmi_ignores_label_names_and_sees_independence():
    assert tq.nmi([0, 0, 1, 1], ["b", "b", "a", "a"]) == pytest.approx(1.0)
    assert tq.nmi([0, 0, 1, 1], ["x", "y", "x", "y"]) == pytest.approx(0.0)
    # one cluster split in two: H(truth) = ln 2, H(pred) = 1.5 ln 2, MI = ln 2 -> 2 / 2.5
    assert tq.nmi([0, 0, 1, 2], ["a", "a", "b", "b"]) == pytest.approx(0.8)
    assert tq.nmi([], []) is None
    with pytest.raises(ValueError):
        tq.nmi([0], [0, 1])


def test_unreleased_clusters_share_one_label():
    labels = tq.with_unreleased({"a": 0, "b": 1, "c": 2}, released=[0])
    assert labels == {"a": 0, "b": tq.UNRELEASED, "c": tq.UNRELEASED}


def _counts():
    assignments = {f"c{i}": 0 for i in range(10)} | {f"d{i}": 1 for i in range(10)} | {f"e{i}": 2 for i in range(4)}
    truth = ({f"c{i}": "python debugging" for i in range(7)} | {f"c{i}": "sql databases" for i in range(7, 10)}
             | {f"d{i}": "gardening" for i in range(10)} | {f"e{i}": "sql databases" for i in range(4)})
    return tq.composition(assignments, truth)


def test_composition_and_majority():
    counts = _counts()
    assert counts[0] == collections.Counter({"python debugging": 7, "sql databases": 3})
    assert tq.ranked_shares(counts[0]) == [("python debugging", 0.7), ("sql databases", pytest.approx(0.3))]
    # a tie is broken by the label, so the majority does not depend on dict order
    assert tq.ranked_shares(collections.Counter({"b": 2, "a": 2}))[0][0] == "a"


def test_planted_named_loose_and_strict():
    topics = [{"id": 0, "name": "Error message", "keywords": ["error message", "sql"]},  # python majority
              {"id": 1, "name": "Pets", "keywords": ["pets"]},  # gardening majority, unexpected keyword
              {"id": 2, "name": "Unlabelled topic", "keywords": []}]  # sql majority, no keyword
    loose, strict = tq.planted_named(topics, _counts(), EXPECTED)
    assert loose == {"python debugging", "gardening"}
    assert strict == {"python debugging"}


def test_mixed_topics_by_second_share():
    topics = [{"id": 0}, {"id": 1}, {"id": 2}]
    counts = _counts()  # topic 0: 70/30; topics 1 and 2: pure
    assert tq.mixed_topics(topics, counts, 0.2) == 1
    assert tq.mixed_topics(topics, counts, 0.3) == 1
    assert tq.mixed_topics(topics, counts, 0.31) == 0


def test_mentions_whole_words_and_phrases():
    assert tq.mentions("My Python  Error\nmessage here", "error message")
    assert tq.mentions("I use SQL.", "sql")
    assert not tq.mentions("a rapid answer", "api")
    assert not tq.mentions("pythonic code", "python")
    assert tq.mentions("c++ templates", "c++")
    assert not tq.mentions("anything", "  ")


def test_topics_joining_two_themes_by_name_and_by_keywords():
    topics = [{"name": "Python and SQL", "keywords": ["python", "sql"]},  # two planted topics, one theme
              {"name": "Python debugging", "keywords": ["python", "composting"]},  # two themes in the keywords only
              {"name": "Gardening, error message", "keywords": ["gardening", "error message"]},  # both
              {"name": "Gardening", "keywords": ["gardening"]}]
    assert tq.themes_mentioned(["python", "garden composting"], EXPECTED, THEMES) == {"software", "home and daily life"}
    assert tq.topics_joining_themes(topics, EXPECTED, THEMES, "name") == 1
    assert tq.topics_joining_themes(topics, EXPECTED, THEMES, "keywords") == 2


def test_keyword_occurrence_weighted_and_plain():
    assignments = {"a": 0, "b": 0, "c": 0, "d": 0, "e": 1, "f": 1, "g": 2}
    facets = {"a": "my Python crashes", "b": "python again", "c": "nothing", "d": "still nothing",
              "e": "compost heap", "f": "Gardening tips", "g": "sql"}
    topics = [{"id": 0, "keywords": ["python"]}, {"id": 1, "keywords": ["gardening", "composting"]},
              {"id": 2, "keywords": []}]  # unlabelled: left out
    weighted, plain = tq.keyword_occurrence(topics, assignments, facets)
    assert plain == pytest.approx((2 / 4 + 1 / 2) / 2)
    assert weighted == pytest.approx((2 + 1) / 6)
    assert tq.keyword_occurrence([{"id": 2, "keywords": []}], assignments, facets) == (None, None)


def test_parse_data_name_path_and_k():
    assert tq.parse_data("gen20k=/data/gen20k.jsonl:30", 50) == tq.DataSpec("gen20k", "/data/gen20k.jsonl", 30)
    assert tq.parse_data("/data/hh.jsonl", 50) == tq.DataSpec("hh", "/data/hh.jsonl", 50)


def test_summary_over_seeds():
    rows = [{"dataset": "x", "seed": 0, "nmi": 0.5, "named": 3, "purity": None},
            {"dataset": "x", "seed": 1, "nmi": 0.7, "named": 5, "purity": None}]
    summary = tq.summarise(rows)
    assert summary["nmi"] == (pytest.approx(0.6), 0.5, 0.7)
    assert summary["named"] == (4, 3, 5)
    assert summary["purity"] is None
    assert "| named | 4 | 3 | 5 |" in tq.markdown_table(rows)


def test_combined_table_puts_data_sets_side_by_side():
    rows = [{"dataset": "gen", "seed": 0, "nmi": 0.5, "seconds": 9.0}, {"dataset": "gen", "seed": 1, "nmi": 0.7},
            {"dataset": "real", "seed": 0, "other": 2}]
    table = tq.combined_table(rows)
    assert "| metric | gen | real |" in table
    assert "| nmi | 0.6 (0.5-0.7) | - |" in table
    assert "| other | - | 2 |" in table
    assert "seconds" not in table


@pytest.mark.e2e
def test_cli_on_a_small_generated_sample(tmp_path):
    import csv
    import os
    import subprocess
    import sys

    from synthetic.sample import write_sample
    path = str(tmp_path / "planted.jsonl")
    write_sample(path, 400, 150, seed=8, topics=4)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # epsilon = inf: the private run is the non-private one, so the two must agree exactly
    completed = subprocess.run(
        [sys.executable, "-m", "eval.utility.topic_quality", "--data", f"small={path}:4", "--seeds", "2", "--set",
         "epsilon=inf", "--set", "min_cluster_size=5", "--output", str(tmp_path / "out"), "--label", "t"],
        cwd=repo, env=dict(os.environ, PYTHONPATH=repo, HF_HUB_OFFLINE="1"), capture_output=True, text=True,
        timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "### small: 400 conversations, k=4, seeds 0-1, epsilon=inf min_cluster_size=5" in completed.stdout
    with open(tmp_path / "out" / "topic_quality_t.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["seed"] for row in rows] == ["0", "1"]
    for row in rows:
        assert row["planted"] == "4" and int(row["released"]) >= 1
        assert float(row["agree_nonprivate"]) == pytest.approx(1.0)
        assert row["nmi_released"] == row["nmi_nonprivate"]
        assert 0.3 < float(row["nmi_released"]) <= 1 and 0 <= float(row["group_purity"]) <= 1
        assert int(row["named_strict"]) <= int(row["named_loose"]) <= 4
        assert int(row["users_after_bounding"]) <= 150
