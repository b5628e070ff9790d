"""Issue item 5: no sensitive guess in public outputs, and no sensitive name on thin votes.

An unverified topic (keywords nearest its DP centre, mostly of a sensitive category, no vote of its
own behind them) is named by the nearest non-sensitive category among those keywords, or
"Unlabelled topic": never "Possibly <category>", and no sensitive word anywhere in it or its group.
A sensitive category names a topic only when a lower 95% bound of its share of the topic's votes is
at least one half (backends/label_evidence.py); otherwise the topic is named by its other evidence
and the share is released as a number (`sensitive_share`)."""

import math
import re

import numpy as np
import pytest

from backends.keyword_categories import KeywordCategories
from backends.keyword_set import load_keyword_set
from backends.label_evidence import (
    CATEGORY_VOTED,
    SENSITIVE_NAME_SHARE,
    UNVERIFIED,
    UNVERIFIED_GROUP,
    VOTED,
    labelled_topic,
    may_name,
    sensitive_guess,
    vote_share,
)
from backends.offline import KeywordClusterNamer
from core.label_sources import CATEGORY_SOURCE, CENTROID_SOURCE, HISTOGRAM_SOURCE, NO_SOURCE
from dp_ops import keyword_votes as kv
from dp_ops.keyword_votes import CategoryVote
from publishing.report import report_topics
from transforms.distinct_names import distinct_names
from transforms.name_clusters import NameClusters, name_topic
from transforms.topic_hierarchy import build_hierarchy
from transforms.voted_labels import LabelTopics, vote_floors, voted_label

KEYWORDS = ("essay", "cover letter", "proofreading", "python", "regex", "bread", "phishing", "money laundering",
            "blue")
CATEGORY_OF = {"essay": "Writing", "cover letter": "Writing", "proofreading": "Writing", "python": "Coding",
               "regex": "Coding", "bread": "Cooking", "phishing": "Crime", "money laundering": "Crime", "blue": None}
CATEGORIES = ("Coding", "Cooking", "Crime", "Writing")
SENSITIVE = frozenset({"Crime"})
NOISE = {"kind": "gaussian", "sigma": 2.0, "std": 2.0}  # as dp_ops.keyword_votes describes a release's noise


def _words(topic: dict) -> str:
    return " ".join([topic["name"], topic["description"], *topic["keywords"]]).casefold()


def _sensitive_words(category_of: dict, sensitive: frozenset) -> list[str]:
    return sorted({w.casefold() for w in sensitive} | {k.casefold() for k, c in category_of.items() if c in sensitive})


def _has_word(text: str, word: str) -> bool:
    return re.search(r"(?<![\w])" + re.escape(word) + r"(?![\w])", text) is not None


# ---------------------------------------------------------------- 1. unverified guesses


def test_an_unverified_guess_is_named_by_its_nearest_non_sensitive_category_never_possibly():
    categories = KeywordCategories(CATEGORY_OF, sensitive=SENSITIVE)
    namer = KeywordClusterNamer(categories)
    guess = ["money laundering", "phishing", "regex", "python"]  # Crime 1 + 1/2 > Coding 1/3 + 1/4
    topic = name_topic(namer, guess, CENTROID_SOURCE, categories)
    assert topic["label_evidence"] == UNVERIFIED and topic["label_source"] == CENTROID_SOURCE
    assert topic["name"] == "Coding (approximate)"
    assert "possibly" not in _words(topic) and "unverified" not in topic["name"].casefold()
    assert not any(_has_word(_words(topic), w) for w in _sensitive_words(CATEGORY_OF, SENSITIVE))
    assert topic["keywords"] == ["regex", "python"]
    assert "not evidence" in topic["description"]
    # The guess itself, for an operator's private/ output only.
    assert sensitive_guess(guess, CENTROID_SOURCE, CATEGORY_OF, SENSITIVE) == "Crime"
    assert sensitive_guess(guess, HISTOGRAM_SOURCE, CATEGORY_OF, SENSITIVE) is None
    assert sensitive_guess(["regex", "phishing"], CENTROID_SOURCE, CATEGORY_OF, SENSITIVE) is None


def test_an_unverified_guess_with_no_non_sensitive_category_is_an_unlabelled_topic_numbered_by_name_clusters():
    categories = KeywordCategories(CATEGORY_OF, sensitive=SENSITIVE)
    namer = KeywordClusterNamer(categories)
    named = {c: name_topic(namer, k, CENTROID_SOURCE, categories)
             for c, k in enumerate([["money laundering", "phishing"], ["phishing", "blue"], []])}
    assert [named[c]["label_evidence"] for c in range(3)] == [UNVERIFIED, UNVERIFIED, "none"]
    assert named[0]["keywords"] == [] and named[1]["keywords"] == ["blue"]
    names = [t["name"] for _, t in sorted(distinct_names(named, CATEGORY_OF).items())]
    # "blue" has no category: it tells nothing apart, and the unverified are numbered, never told apart.
    assert names == ["Unlabelled topic", "Unlabelled topic (2)", "Unlabelled topic (3)"]
    for topic in named.values():
        assert not any(_has_word(_words(topic), w) for w in _sensitive_words(CATEGORY_OF, SENSITIVE))


def test_no_centre_guess_of_the_bundled_set_puts_a_sensitive_word_in_a_topic_or_its_group():
    """Random centre rankings of the bundled K, each led by a sensitive category's keywords: no topic and
    no group says "Possibly" or any sensitive category or keyword."""
    keyword_set = load_keyword_set()
    category_of = keyword_set.category_of()
    sensitive = frozenset(keyword_set.sensitive_categories)
    categories = KeywordCategories(category_of, sensitive=sensitive)
    namer = KeywordClusterNamer(categories)
    rng = np.random.default_rng(5)
    everything = list(keyword_set.keywords)
    by_category = {}
    for keyword, category in category_of.items():
        by_category.setdefault(category, []).append(keyword)
    named = {}
    for cluster in range(200):
        category = sorted(sensitive)[cluster % len(sensitive)]
        lead = list(rng.choice(by_category[category], size=3, replace=False))
        rest = [k for k in rng.choice(everything, size=int(rng.integers(0, 4)), replace=False) if k not in lead]
        named[cluster] = name_topic(namer, lead + rest, CENTROID_SOURCE, categories)
    assert all(t["label_evidence"] == UNVERIFIED for t in named.values())
    topics = report_topics(distinct_names(named, category_of), {c: 10.0 + c for c in named})
    hierarchy = build_hierarchy(topics, np.zeros((len(named), 2)), category_of, namer)
    words = _sensitive_words(category_of, sensitive)
    # Released keywords are checked by their category ("murder mystery game" is a game, not a murder).
    assert not [k for t in topics for k in t["keywords"] if category_of.get(k) in sensitive]
    texts = ([f"{t['name']} {t['description']}".casefold() for t in topics]
             + [" ".join([g["name"], g["description"], *g["keywords"]]).casefold() for g in hierarchy["groups"]])
    assert not [(text, w) for text in texts for w in words if _has_word(text, w)]
    assert not [text for text in texts if "possibly" in text]
    assert [g["name"] for g in hierarchy["groups"]] == [UNVERIFIED_GROUP]
    assert len({t["name"].casefold() for t in topics}) == len(topics)


# ---------------------------------------------------------------- 2. the share bound


def test_the_share_bound_is_exact_without_noise_and_widens_with_it():
    exact = vote_share("Crime", 30.0, 1, 70.0, 3, None)
    assert exact == {"category": "Crime", "share": 0.3, "low": 0.3, "high": 0.3}
    noisy = vote_share("Crime", 30.0, 1, 70.0, 3, NOISE)
    z = 1.959963984540054
    low = (30 - z * 2) / (30 - z * 2 + 70 + z * 2 * math.sqrt(3))
    high = (30 + z * 2) / (30 + z * 2 + 70 - z * 2 * math.sqrt(3))
    assert noisy["share"] == pytest.approx(0.3) and noisy["low"] == pytest.approx(low, abs=1e-4)
    assert noisy["high"] == pytest.approx(high, abs=1e-4)
    assert not may_name(noisy) and may_name(vote_share("Crime", 90.0, 1, 10.0, 3, NOISE))
    # votes that pure noise could give: the bounds span (nearly) all of [0, 1], never a name
    tiny = vote_share("Crime", 1.0, 1, -2.0, 39, NOISE)
    assert tiny["low"] == 0.0 and tiny["high"] == 1.0 and 0.0 <= tiny["share"] <= 1.0


@pytest.mark.parametrize("crime, others", [(30.0, (70.0, 0.0, 0.0)), (50.0, (30.0, 20.0, 0.0)),
                                           (90.0, (10.0, 0.0, 0.0)), (12.0, (3.0, 1.0, 0.0))])
def test_each_bound_holds_the_true_share_at_least_95_percent_of_the_time(crime, others):
    rng = np.random.default_rng(11)
    truth = crime / (crime + sum(others))
    draws, above, below = 4000, 0, 0
    for _ in range(draws):
        noisy = np.array([crime, *others]) + rng.normal(0.0, NOISE["sigma"], 4)
        share = vote_share("Crime", float(noisy[0]), 1, float(noisy[1:].sum()), 3, NOISE)
        assert share["low"] <= share["share"] <= share["high"]
        above += share["low"] > truth
        below += share["high"] < truth
    assert above / draws <= 0.05 and below / draws <= 0.05


def _values(crime: float, writing: float, keyword_values: dict | None = None, **other_categories) -> list:
    category_values = {"Crime": crime, "Writing": writing, **other_categories}
    return ([(k, (keyword_values or {}).get(k, 0.0)) for k in KEYWORDS]
            + [(CategoryVote(c), category_values.get(c, 0.0)) for c in CATEGORIES])


def test_a_sensitive_category_with_a_thin_share_does_not_name_its_topic_and_its_share_is_released():
    floors = vote_floors(NOISE, len(KEYWORDS), 0.05)
    assert 30 > floors.category(len(CATEGORIES), True)  # Crime clears even its sensitive floor
    label = voted_label(_values(30.0, 70.0, {"phishing": 20.0, "essay": 25.0}), 5, floors, CATEGORY_OF, SENSITIVE)
    assert label.keywords == ["essay"] and label.category == "Writing"  # phishing cleared, but not shown
    assert label.sensitive_share["category"] == "Crime"
    assert label.sensitive_share["share"] == pytest.approx(0.3, abs=1e-4)
    assert label.sensitive_share["low"] < SENSITIVE_NAME_SHARE
    topic = labelled_topic(KeywordClusterNamer(KeywordCategories(CATEGORY_OF)).name, label.keywords,
                           HISTOGRAM_SOURCE, CATEGORY_OF, SENSITIVE, label.category, label.sensitive_share)
    assert topic["name"] == "Writing: essay" and topic["voted_category"] == "Writing"
    assert topic["sensitive_share"] == label.sensitive_share
    assert "30%" in topic["description"] and "crime" not in topic["description"].casefold()
    # Crime alone cleared (the other votes stay under their floors): the topic is then labelled as if no
    # vote had, with its share still shown.
    alone = voted_label(_values(8.0, 4.0, Coding=4.0, Cooking=4.0), 5, floors, CATEGORY_OF, SENSITIVE)
    assert (alone.keywords, alone.category) == ([], None)
    assert alone.sensitive_share["share"] == pytest.approx(0.4, abs=1e-4) and not may_name(alone.sensitive_share)


def test_a_sensitive_category_with_a_large_share_names_its_topic():
    floors = vote_floors(NOISE, len(KEYWORDS), 0.05)
    label = voted_label(_values(90.0, 10.0), 5, floors, CATEGORY_OF, SENSITIVE)
    assert (label.keywords, label.category) == ([], "Crime") and may_name(label.sensitive_share)
    topic = labelled_topic(None, [], CATEGORY_SOURCE, CATEGORY_OF, SENSITIVE, "Crime", label.sensitive_share)
    assert topic["name"] == "Crime" and topic["label_evidence"] == CATEGORY_VOTED
    assert topic["sensitive_share"]["share"] == pytest.approx(0.9, abs=1e-4)
    keywords = voted_label(_values(90.0, 10.0, {"phishing": 60.0}), 5, floors, CATEGORY_OF, SENSITIVE)
    assert keywords.keywords == ["phishing"] and keywords.category == "Crime"


def test_on_noisy_releases_a_thin_sensitive_share_almost_never_names_a_topic_and_a_large_one_almost_always():
    floors = vote_floors(NOISE, len(KEYWORDS), 0.05)
    rng = np.random.default_rng(3)
    columns = kv.vote_columns(KEYWORDS, CATEGORIES)

    def rates(crime, writing, draws=1000):
        """(share of draws whose label shows Crime: its category or a keyword, share that may name by it)."""
        exact = np.array([{"Crime": crime, "Writing": writing}.get(c.category, 0.0) if isinstance(c, CategoryVote)
                          else 0.0 for c in columns])
        shown = allowed = 0
        for _ in range(draws):
            noisy = exact + rng.normal(0.0, NOISE["sigma"], len(columns))
            label = voted_label(list(zip(columns, noisy)), 5, floors, CATEGORY_OF, SENSITIVE)
            shown += label.category == "Crime" or any(CATEGORY_OF[k] == "Crime" for k in label.keywords)
            allowed += label.sensitive_share is not None and may_name(label.sensitive_share)
        return shown / draws, allowed / draws

    assert rates(30.0, 70.0) == (0.0, 0.0)
    assert max(rates(45.0, 55.0)) <= 0.05  # under half: named at most at the lower bound's error rate
    shown, allowed = rates(90.0, 10.0)
    assert allowed >= 0.99 and shown >= 0.9


def test_keyword_votes_without_category_columns_follow_the_same_rule():
    floors = vote_floors(NOISE, len(KEYWORDS), 0.05)
    thin = voted_label([(k, {"phishing": 30.0, "essay": 25.0, "python": 40.0}.get(k, 0.0)) for k in KEYWORDS],
                       5, floors, CATEGORY_OF, SENSITIVE)
    assert thin.keywords == ["python", "essay"] and thin.sensitive_share["category"] == "Crime"
    assert thin.sensitive_share["share"] == pytest.approx(30 / 95, abs=1e-4)
    large = voted_label([(k, {"phishing": 60.0, "money laundering": 50.0, "essay": 4.0}.get(k, 0.0))
                         for k in KEYWORDS], 5, floors, CATEGORY_OF, SENSITIVE)
    assert large.keywords == ["phishing", "money laundering"] and may_name(large.sensitive_share)


def test_both_engines_carry_the_share_from_the_votes_to_the_released_topic():
    floors = vote_floors(NOISE, len(KEYWORDS), 0.05)
    categories = KeywordCategories(CATEGORY_OF, sensitive=SENSITIVE)
    release = {(cluster, column): value for cluster, values in
               enumerate([_values(30.0, 70.0, {"essay": 25.0}), _values(90.0, 10.0), _values(0.0, 50.0)])
               for column, value in values}
    labels = LabelTopics(5, floors, categories).local(release)
    assert [labels[c][:3] for c in range(3)] == [(["essay"], HISTOGRAM_SOURCE, "Writing"),
                                                 ([], CATEGORY_SOURCE, "Crime"), ([], CATEGORY_SOURCE, "Writing")]
    assert labels[2][3] is None
    named = NameClusters(KeywordClusterNamer(categories), categories).local(labels)
    topics = {t["id"]: t for t in report_topics(named, {0: 50.0, 1: 40.0, 2: 30.0})}
    assert topics[0]["sensitive_share"]["category"] == "Crime" and topics[0]["label_evidence"] == VOTED
    assert topics[1]["name"] == "Crime" and topics[1]["sensitive_share"]["low"] >= SENSITIVE_NAME_SHARE
    assert "sensitive_share" not in topics[2]
    # A three-part label (centroid mode, an older caller) is still named.
    assert NameClusters(KeywordClusterNamer(categories), categories).local(
        {0: (["python"], CENTROID_SOURCE, None)})[0]["name"] == "Coding: python (approximate)"
    assert NameClusters(KeywordClusterNamer(categories), categories).local(
        {0: ([], NO_SOURCE, None, None)})[0]["name"] == "Unlabelled topic"


def test_the_withheld_sensitive_guess_goes_to_the_private_rows_only():
    from backends.keyword_categories import KeywordCategories
    from beam_jobs.insights import sensitive_guess_rows
    from core.label_sources import CENTROID_SOURCE, HISTOGRAM_SOURCE

    categories = KeywordCategories({"credit card fraud": "Crime and fraud", "phishing": "Crime and fraud",
                                    "python": "Python coding"}, sensitive=frozenset({"Crime and fraud"}))
    guess = ("credit card fraud", "phishing", "python")
    assert sensitive_guess_rows((3, (guess, CENTROID_SOURCE, None, None)), categories) == [
        {"cluster_id": 3, "sensitive_guess": "Crime and fraud", "nearest_keywords": list(guess)}]
    assert sensitive_guess_rows((3, (guess, HISTOGRAM_SOURCE, None, None)), categories) == []  # voted: no guess
    assert sensitive_guess_rows((4, (("python",), CENTROID_SOURCE, None, None)), categories) == []
