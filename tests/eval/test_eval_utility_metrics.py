"""eval/utility/utility_metrics.py on tiny hand-made inputs with known answers."""

import math

import numpy as np
import pytest

from eval.utility import utility_metrics as um
from eval.utility.llm_judge import SummaryJudge


def test_jaccard_known_values():
    assert um.jaccard({"a", "b", "c"}, {"b", "c", "d"}) == pytest.approx(2 / 4)
    assert um.jaccard({"a"}, {"b"}) == 0.0
    assert um.jaccard(set(), set()) == 1.0


def test_tokens_and_bigrams():
    private, baseline = ["Python unit testing."], ["Unit testing in Python"]
    assert um.tokens(private) == {"python", "unit", "testing"}
    assert um.jaccard(um.tokens(private), um.tokens(baseline)) == pytest.approx(3 / 4)
    assert um.bigrams(private) == {("python", "unit"), ("unit", "testing")}
    # shared: (unit, testing); union: (python, unit), (unit, testing), (testing, in), (in, python)
    assert um.jaccard(um.bigrams(private), um.bigrams(baseline)) == pytest.approx(1 / 4)


def test_tfidf_terms_pick_each_sides_distinctive_words():
    private = ["bread baking sourdough", "sourdough starter"]
    baseline = ["tax return filing", "tax deadline"]
    top_private, top_baseline = um.tfidf_terms(private, baseline, top=2)
    assert "sourdough" in top_private and "tax" in top_baseline
    assert um.jaccard(top_private, top_baseline) == 0.0
    same_private, same_baseline = um.tfidf_terms(private, private, top=3)
    assert same_private == same_baseline


def test_key_phrases_identical_and_disjoint_texts():
    a = ["Sourdough bread baking at home needs a lively starter and a hot oven."]
    b = ["Filing a federal tax return before the April deadline avoids penalties."]
    assert um.jaccard(um.key_phrases(a), um.key_phrases(a)) == 1.0
    assert um.jaccard(um.key_phrases(a), um.key_phrases(b)) == 0.0
    assert um.key_phrases(a)  # YAKE found something


@pytest.mark.real_model  # loads the spaCy model (~10 s on a quiet machine)
def test_noun_chunks_drop_determiners():
    chunks = um.noun_chunks(["The quick brown fox jumps over the lazy dog."])
    assert chunks == {"quick brown fox", "lazy dog"}


def test_embedding_proximity_and_topic_overlap_on_known_vectors():
    private = np.array([[1.0, 0.0], [0.0, 1.0]])
    baseline = np.array([[1.0, 0.0], [0.6, 0.8], [-1.0, 0.0]])
    proximity = um.embedding_proximity(private, baseline)
    assert proximity["mean"] == pytest.approx(0.9) and proximity["median"] == pytest.approx(0.9)
    overlap = um.topic_overlap(private, baseline, threshold=0.85)
    assert overlap["private_matched"] == pytest.approx(0.5)  # only [1, 0] has a match >= 0.85
    # baseline rows' nearest private cosines: 1.0, 0.8, 0.0 -> one of three covered
    assert overlap["baseline_covered"] == pytest.approx(1 / 3)
    assert um.embedding_proximity(np.zeros((0, 2)), baseline)["mean"] is None


class _PrefersPrivate(SummaryJudge):
    """Rates a summary containing PRIVATE 5, others 2, and prefers the PRIVATE one."""

    def __init__(self):
        self.private_first = 0
        self.calls = 0

    def compare(self, first, second):
        self.calls += 1
        self.private_first += "PRIVATE" in first
        rate = lambda text: 5 if "PRIVATE" in text else 2  # noqa: E731
        return rate(first), rate(second), 0 if "PRIVATE" in first else 1


def test_judge_comparison_unshuffles_random_order():
    private = [f"PRIVATE summary {i}" for i in range(200)]
    baseline = ["baseline summary"]
    vectors_private, vectors_baseline = np.ones((200, 2)), np.ones((1, 2))
    judge = _PrefersPrivate()
    result = um.judge_comparison(private, baseline, vectors_private, vectors_baseline, judge, seed=1)
    assert judge.calls == 200
    assert 60 < judge.private_first < 140  # both orders were shown
    assert result["private_preferred"] == 1.0
    assert result["mean_rating_private"] == 5 and result["mean_rating_baseline"] == 2


def test_no_judge_reports_not_computed():
    result = um.judge_comparison(["a"], ["b"], np.ones((1, 2)), np.ones((1, 2)), None)
    assert result["judge"] is None and "no LLM judge" in result["note"]


def test_utility_metrics_of_identical_summaries_are_perfect():
    summaries = ["Baking bread. Conversations about sourdough starters and ovens.",
                 "Tax returns. Conversations about filing deadlines and deductions."]
    fake_embed = lambda texts: np.eye(len(summaries))[[summaries.index(t) for t in texts]]  # noqa: E731
    result = um.utility_metrics(summaries, summaries, embed=fake_embed)
    assert all(value == 1.0 for value in result["jaccard"].values())
    assert result["embedding_proximity"]["mean"] == pytest.approx(1.0)
    assert result["topic_overlap"]["private_matched"] == 1.0
    assert math.isclose(result["topic_overlap"]["baseline_covered"], 1.0)


def test_topic_summary_joins_name_description_keywords():
    topic = {"name": "Python", "description": "About python.", "keywords": ["python", "debugging"]}
    assert um.topic_summary(topic) == "Python. About python. Keywords: python, debugging."


def test_group_purity_is_size_weighted():
    groups = [{"topic_ids": [0, 1, 2]}, {"topic_ids": [3]}]
    theme = {0: "software", 1: "software", 2: "health", 3: "health"}
    size = {0: 10, 1: 20, 2: 10, 3: 5}
    assert um.group_purity(groups, theme, size) == pytest.approx((30 + 5) / 45)
    assert um.group_purity([{"topic_ids": [9]}], theme, size) is None
