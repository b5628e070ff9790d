"""Category votes (dp_ops/keyword_votes.py) and labels from the release, category first
(transforms/voted_labels.py): sensitivity, floors on pure noise, keywords only inside a voted
category, a topic named by its category, and the Beam stages against the pure functions."""

import math

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from backends.keyword_categories import KeywordCategories
from backends.label_evidence import CATEGORY_VOTED, VOTED, labelled_topic
from core.label_sources import CATEGORY_SOURCE, HISTOGRAM_SOURCE
from core.records import ConversationBlock
from dp_ops import keyword_votes as kv
from dp_ops.dp_counts import release_floor
from dp_ops.keyword_votes import CategoryVote
from dp_ops.run_budget import RunBudget
from tests.conftest import local_pipeline
from transforms.dp_votes import DPKeywordVotes
from transforms.keyword_histograms import SelectKeywords
from transforms.topic_hierarchy import category_groups
from transforms.voted_labels import (
    LabelTopics,
    VoteFloors,
    category_votes_section,
    label_keywords,
    min_users_to_label,
    vote_floors,
    vote_shares,
    voted_categories,
    voted_keywords,
)

KEYWORDS = ("essay", "cover letter", "proofreading", "python", "regex", "bread", "phishing", "blue")
CATEGORY_OF = {"essay": "Writing", "cover letter": "Writing", "proofreading": "Writing", "python": "Coding",
               "regex": "Coding", "bread": "Cooking", "phishing": "Crime", "blue": None}
CATEGORIES = ("Coding", "Cooking", "Crime", "Writing")
SENSITIVE = frozenset({"Crime"})
NOISE = {"kind": "gaussian", "sigma": 2.0}


@pytest.mark.parametrize("share", [0.3, 0.5, 0.9])
def test_one_users_keyword_and_category_votes_have_l2_norm_at_most_one(share):
    rng = np.random.default_rng(7)
    columns = kv.vote_columns(KEYWORDS, CATEGORIES)
    worst = 0.0
    for _ in range(400):
        kept = int(rng.integers(1, 6))  # n_u conversations, each weighing 1/n_u
        votes = []
        for _ in range(kept):
            chosen = list(rng.choice(KEYWORDS, size=int(rng.integers(0, 4)), replace=False))
            votes += [(int(rng.integers(0, 2)), column, value)
                      for column, value in kv.conversation_votes(chosen, 1.0 / kept, 3, CATEGORY_OF, share)]
        worst = max(worst, float(np.linalg.norm(kv.exact_vote_sums(votes, 2, columns))))
    assert worst <= 1.0 + 1e-12
    # reached: one conversation, all its keywords in one category
    one = kv.conversation_votes(["essay", "cover letter"], 1.0, 2, CATEGORY_OF, share)
    assert math.fsum(v * v for _, v in one) == pytest.approx(1.0)


def test_a_conversation_gives_its_categories_norm_sqrt_share_in_proportion_to_its_keywords():
    votes = dict(kv.conversation_votes(["essay", "cover letter", "python"], 0.5, 3, CATEGORY_OF, 0.5))
    keyword_part = 0.5 * math.sqrt(0.5) / math.sqrt(3)
    assert votes["essay"] == pytest.approx(keyword_part) and votes["python"] == pytest.approx(keyword_part)
    # Writing holds 2 of the keywords, Coding 1: (2, 1) scaled to norm 0.5 * sqrt(0.5)
    scale = 0.5 * math.sqrt(0.5) / math.sqrt(5)
    assert votes[CategoryVote("Writing")] == pytest.approx(2 * scale)
    assert votes[CategoryVote("Coding")] == pytest.approx(scale)
    assert math.fsum(v * v for v in votes.values()) == pytest.approx(0.25)


def test_without_a_category_or_a_share_a_conversation_votes_its_keywords_alone():
    plain = kv.conversation_votes(["essay", "python"], 1.0, 2)
    assert kv.conversation_votes(["essay", "python"], 1.0, 2, CATEGORY_OF, 0.0) == plain
    # no keyword with a category: the keywords keep the whole norm
    assert kv.conversation_votes(["blue"], 1.0, 2, CATEGORY_OF, 0.5) == [("blue", 1.0)]
    with pytest.raises(ValueError):
        kv.conversation_votes(["essay"], 1.0, 2, CATEGORY_OF, 1.0)


def test_a_category_column_is_never_a_keyword():
    columns = kv.vote_columns(("Writing",), ("Writing",))
    assert len(set(columns)) == 2 and CategoryVote("Writing") != "Writing"
    sums = kv.exact_vote_sums([(0, "Writing", 1.0), (0, CategoryVote("Writing"), 2.0)], 1, columns)
    assert sums.tolist() == [[1.0, 2.0]]


def test_pure_noise_clears_a_category_at_the_stated_rate_and_a_sensitive_one_at_a_tenth():
    categories, sensitive_count, topics, rate = 40, 7, 20000, 0.05
    names = [f"c{j}" for j in range(categories)]
    sensitive = frozenset(names[:sensitive_count])
    floors = vote_floors(NOISE, 1764, rate)
    noise = kv.noisy_vote_sums(np.zeros((topics, categories)), NOISE["sigma"], noise_seed=3)
    voted = [voted_categories(dict(zip(names, row)), floors, sensitive) for row in noise]
    plain = np.mean([sum(c not in sensitive for c in v) for v in voted])
    flagged = np.mean([sum(c in sensitive for c in v) for v in voted])
    expected_plain = rate * (categories - sensitive_count) / categories
    expected_sensitive = rate * 0.1 * sensitive_count / categories
    assert abs(plain - expected_plain) < 4 * math.sqrt(expected_plain / topics)
    assert abs(flagged - expected_sensitive) < 4 * math.sqrt(expected_sensitive / topics) + 1e-4
    assert floors.category(categories, True) > floors.category(categories, False)


def _release(keyword_values: dict, category_values: dict) -> list:
    return ([(k, keyword_values.get(k, 0.0)) for k in KEYWORDS]
            + [(CategoryVote(c), category_values.get(c, 0.0)) for c in CATEGORIES])


def test_keywords_are_released_only_inside_a_voted_category():
    floors = vote_floors(NOISE, len(KEYWORDS), 0.05)
    category_floor = floors.category(len(CATEGORIES), False)
    pool_floor = floors.pool(3)  # Writing's three keywords
    assert pool_floor < floors.keyword
    values = _release({"essay": (pool_floor + floors.keyword) / 2,  # over its pool's floor only
                       "proofreading": pool_floor - 0.1,
                       "python": floors.keyword + 5,  # high, but Coding is not voted: a stray
                       "blue": floors.keyword + 1},  # no category: over the floor over all of K
                      {"Writing": category_floor + 0.1, "Coding": category_floor - 0.1})
    keywords, category = voted_keywords(values, 5, floors, CATEGORY_OF, SENSITIVE)
    assert keywords == ["blue", "essay"] and category == "Writing"


def test_a_sensitive_category_needs_the_stricter_floor():
    floors = vote_floors(NOISE, len(KEYWORDS), 0.05)
    between = (floors.category(len(CATEGORIES), False) + floors.category(len(CATEGORIES), True)) / 2
    assert voted_keywords(_release({}, {"Crime": between}), 5, floors, CATEGORY_OF, SENSITIVE) == ([], None)
    assert voted_keywords(_release({}, {"Cooking": between}), 5, floors, CATEGORY_OF, SENSITIVE) == ([], "Cooking")


def test_without_category_columns_keywords_clear_the_floor_over_k():
    floors = vote_floors(NOISE, len(KEYWORDS), 0.05)
    values = [("essay", floors.keyword + 1), ("python", floors.keyword - 1)]
    assert voted_keywords(values, 5, floors, CATEGORY_OF, SENSITIVE) == (["essay"], None)


def test_the_non_private_floors_release_any_vote():
    floors = VoteFloors(None, 0.05, 1e-9)
    values = _release({"python": 0.2}, {"Coding": 0.3})
    assert voted_keywords(values, 5, floors, CATEGORY_OF, SENSITIVE) == (["python"], "Coding")


def test_a_topic_named_by_its_category_is_a_finding_in_its_group_with_that_categorys_nearest_keywords():
    def no_namer(keywords):
        raise AssertionError("the namer is not asked for a topic named by its category")

    ranking = ["python", "phishing", "proofreading", "bread", "essay", "cover letter"]  # K by closeness to the centre
    keywords, source, category = label_keywords([], ranking, 2, "Writing", CATEGORY_OF)
    assert (keywords, source, category) == (["proofreading", "essay"], CATEGORY_SOURCE, "Writing")
    topic = labelled_topic(no_namer, keywords, source, CATEGORY_OF, SENSITIVE, category)
    assert topic["name"] == "Writing" and topic["keywords"] == ["proofreading", "essay"]
    assert "not ones its conversations chose" in topic["description"]
    assert topic["label_evidence"] == CATEGORY_VOTED and topic["voted_category"] == "Writing"
    groups = category_groups([{**topic, "id": 3}], CATEGORY_OF)
    assert [(kind, name, [t["id"] for t in members]) for kind, name, members in groups] == [
        ("category", "Writing", [3])]
    # a voted sensitive category is named, but the centre's guesses inside it are not shown
    keywords, source, category = label_keywords([], ranking, 2, "Crime", CATEGORY_OF)
    assert keywords == ["phishing"]
    crime = labelled_topic(no_namer, keywords, source, CATEGORY_OF, SENSITIVE, category)
    assert crime["name"] == "Crime" and crime["keywords"] == [] and crime["voted_category"] == "Crime"
    with pytest.raises(ValueError):
        labelled_topic(no_namer, [], CATEGORY_SOURCE, CATEGORY_OF, SENSITIVE, None)


def test_a_topic_named_by_its_keywords_carries_its_voted_category():
    topic = labelled_topic(lambda kws: ("Writing: essay", "d"), ["essay"], HISTOGRAM_SOURCE, CATEGORY_OF, SENSITIVE,
                           "Writing")
    assert topic["voted_category"] == "Writing" and topic["label_evidence"] == VOTED


def test_min_users_to_label_is_the_cheaper_of_a_keyword_and_a_category():
    floors = vote_floors(NOISE, 1764, 0.05)
    assert min_users_to_label(floors, 0.0, 0) == math.ceil(floors.keyword)
    by_category = math.ceil(floors.category(40, False) / math.sqrt(0.5))
    assert min_users_to_label(floors, 0.5, 40) == min(math.ceil(floors.keyword), by_category)
    section = category_votes_section(floors, 0.5, tuple(f"c{j}" for j in range(40)))
    assert section["categories"] == 40 and section["category_release_floor"] == pytest.approx(
        release_floor(NOISE, 40, 0.05))
    assert category_votes_section(floors, 0.0, ()) is None


class _Picks:
    def setup(self):
        pass

    def select(self, facets, embeddings, max_keywords):
        return [facet.split("|")[:max_keywords] for facet in facets]


def test_the_beam_stages_release_category_columns_and_label_as_the_pure_functions():
    facets = ["essay|cover letter", "essay|proofreading", "python|regex", "blue"]
    block = ConversationBlock(["c0", "c1", "c2", "c3"], ["u0", "u1", "u2", "u3"], np.ones(4), facets,
                              np.zeros((4, 3), dtype=np.float32), cluster_ids=np.array([0, 0, 1, 1], dtype=np.int64))
    categories = KeywordCategories(CATEGORY_OF, sensitive=SENSITIVE)
    columns = kv.vote_columns(KEYWORDS, categories.names)
    floors = VoteFloors(None, 0.05, 0.1)  # noise-free floors: the labels follow the exact sums
    with local_pipeline() as pipeline:
        selection = (pipeline | beam.Create([block])
                     | SelectKeywords(_Picks(), KEYWORDS, 2, weighted=True, categories=categories, category_share=0.5))
        kept = pipeline | "kept" >> beam.Create([0, 1])
        release = selection.output | DPKeywordVotes(2, columns, 1.0, 1e-6, kept, RunBudget(1e-6), noise_seed=4)
        labels = release | LabelTopics(3, floors, categories)
        exact_votes = [(c, column, value) for facet, c in zip(facets, [0, 0, 1, 1])
                       for column, value in kv.conversation_votes(facet.split("|"), 1.0, 2, CATEGORY_OF, 0.5)]
        noisy = kv.noisy_vote_sums(kv.exact_vote_sums(exact_votes, 2, columns), 1.0, 4)
        expected = []
        for cluster in (0, 1):
            values = list(zip(columns, noisy[cluster]))
            keywords, category = voted_keywords(values, 3, floors, CATEGORY_OF, SENSITIVE)
            keywords, source, category = label_keywords(keywords, None, 3, category)
            # No sensitive category cleared its floor: the label's fourth part, its sensitive share, is None;
            # its fifth is the vote shares of its keywords and category.
            expected.append((cluster, (keywords, source, category, None,
                                       vote_shares(values, keywords, category, floors.noise))))
        assert_that(labels, equal_to(expected))
    assert categories.names == CATEGORIES


def test_topics_named_by_one_category_are_numbered_not_told_apart_by_a_guessed_keyword():
    from transforms.distinct_names import distinct_names
    ranking = ["essay", "cover letter", "proofreading"]
    topics = {}
    for cluster in (4, 9):
        keywords, source, category = label_keywords([], ranking[cluster % 2:], 2, "Writing", CATEGORY_OF)
        topics[cluster] = labelled_topic(None, keywords, source, CATEGORY_OF, SENSITIVE, category)
    assert [t["name"] for _, t in sorted(distinct_names(topics, CATEGORY_OF).items())] == ["Writing", "Writing (2)"]
