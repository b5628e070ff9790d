"""eval/utility/label_fit.py on hand-made inputs, with a bag-of-words stand-in for the judge model."""

import re

import numpy as np
import pytest

from eval.utility.label_fit import chance, ctfidf_labels, label_fit, reference_clusters, topic_label_text

VOCABULARY = ["cooking", "recipe", "pasta", "python", "code", "bug", "garden", "tomato", "soil", "travel"]


def bag_of_words(texts: list[str]) -> np.ndarray:
    """Counts of VOCABULARY's words: deterministic, and similar texts share words."""
    vectors = np.zeros((len(texts), len(VOCABULARY)))
    for row, text in enumerate(texts):
        for word in re.findall(r"[a-z]+", text.lower()):
            if word in VOCABULARY:
                vectors[row, VOCABULARY.index(word)] += 1
    return vectors


TEXTS = {
    "c1": "a pasta recipe for cooking tonight",
    "c2": "cooking pasta with a new recipe",
    "c3": "python code with a bug",
    "c4": "fix the bug in my python code",
    "c5": "tomato plants in garden soil",
    "c6": "garden soil for a tomato",
}
ASSIGNMENTS = {"c1": 0, "c2": 0, "c3": 1, "c4": 1, "c5": 2, "c6": 2}
LABELS = {0: "Cooking: recipe, pasta", 1: "Programming: python, code, bug", 2: "Gardening: garden, tomato, soil"}


def test_ctfidf_picks_each_class_distinctive_term():
    documents = ["the pasta recipe", "pasta for dinner", "a python bug", "python code", "pasta and python"]
    classes = [0, 0, 1, 1, 1]
    labels = ctfidf_labels(documents, classes, top_n=2)
    assert labels[0][0] == "pasta"
    assert labels[1][0] == "python"
    # Stop words never make a label; no class gets a term it does not contain.
    assert not {"the", "for", "and", "a"} & {t for terms in labels.values() for t in terms}
    assert set(labels[0]) <= {"pasta", "recipe", "dinner"}


def test_ctfidf_weights_terms_frequent_everywhere_down():
    # "help" is the most frequent word of class 0 but common to both classes: the term only class 0
    # uses ranks first.
    documents = ["help help help garden", "help garden", "help help help travel", "help travel"]
    labels = ctfidf_labels(documents, [0, 0, 1, 1], top_n=2)
    assert labels[0] == ["garden", "help"]
    assert labels[1] == ["travel", "help"]


def test_ctfidf_of_stop_words_only_is_empty():
    assert ctfidf_labels(["the and", "of a"], [3, 4]) == {3: [], 4: []}


def test_fit_is_one_when_each_text_matches_its_own_label():
    fit = label_fit(LABELS, ASSIGNMENTS, TEXTS, bag_of_words)
    assert fit == {"labels": 3, "members": 6, "top1": 1.0, "top3": 1.0}


def test_fit_drops_when_labels_are_swapped():
    swapped = {0: LABELS[1], 1: LABELS[2], 2: LABELS[0]}
    fit = label_fit(swapped, ASSIGNMENTS, TEXTS, bag_of_words)
    assert fit["top1"] == 0.0
    assert fit["top3"] == 1.0  # three labels: every label is in the top 3
    two_swapped = {0: LABELS[1], 1: LABELS[0], 2: LABELS[2]}
    assert label_fit(two_swapped, ASSIGNMENTS, TEXTS, bag_of_words, ks=(1, 2))["top1"] == pytest.approx(2 / 6)


def test_top3_counts_the_three_nearest_labels():
    labels = {0: "recipe", 1: "python", 2: "garden", 3: "travel", 4: "pasta cooking recipe"}
    assignments = {"c1": 0, "c2": 0}
    fit = label_fit(labels, assignments, TEXTS, bag_of_words)
    # Label 4 shares more words than label 0 with both texts; label 0 is second, so top-3 only.
    assert fit["top1"] == 0.0 and fit["top3"] == 1.0


def test_ties_count_against_and_unlabelled_topics_are_skipped():
    labels = {0: "travel", 1: "travel"}  # identical labels: neither can be the unique nearest
    fit = label_fit(labels, {"c1": 0, "c3": 1, "c5": 7}, TEXTS, bag_of_words, ks=(1,))
    assert fit == {"labels": 2, "members": 2, "top1": 0.0}


def test_chance_is_one_and_three_over_n():
    assert chance(20) == (pytest.approx(1 / 20), pytest.approx(3 / 20))
    assert chance(2) == (0.5, 1.0)
    assert chance(0) == (0.0, 0.0)


def test_topic_label_text_joins_name_and_keywords():
    assert topic_label_text({"name": "Cooking", "keywords": ["pasta", "recipe"]}) == "Cooking: pasta, recipe"
    assert topic_label_text({"name": "Topic 3", "keywords": []}) == "Topic 3"


def test_reference_clusters_separate_clear_groups():
    vectors = bag_of_words([TEXTS[c] for c in sorted(TEXTS)])
    clusters = reference_clusters(vectors, 3, seed=0)
    assert len(set(clusters)) == 3
    assert clusters[0] == clusters[1] and clusters[2] == clusters[3] and clusters[4] == clusters[5]
