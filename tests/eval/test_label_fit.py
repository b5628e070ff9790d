"""eval/utility/label_fit.py on hand-made inputs, with a bag-of-words stand-in for the judge model."""

import re

import numpy as np
import pytest

from eval.utility.label_fit import (
    SampleNamer,
    chance,
    ctfidf_labels,
    label_fit,
    reference_clusters,
    topic_label_text,
    topic_samples,
)

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


def test_topic_samples_draw_a_fixed_number_of_each_topics_own_texts():
    texts = {f"c{i}": f"text {i} " + "x" * 50 for i in range(30)}
    assignments = {f"c{i}": i % 3 for i in range(30)}  # 10 members per topic
    samples = topic_samples(assignments, texts, [0, 2], size=4, seed=1, max_chars=20)
    assert set(samples) == {0, 2}  # topic 1 was not asked for
    for topic, sample in samples.items():
        members = {" ".join(texts[c].split())[:20] for c, t in assignments.items() if t == topic}
        assert len(sample) == 4 and len(set(sample)) == 4 and set(sample) <= members
        assert all(len(text) == 20 for text in sample)
    assert samples == topic_samples(assignments, texts, [0, 2], size=4, seed=1, max_chars=20)
    assert samples != topic_samples(assignments, texts, [0, 2], size=4, seed=2, max_chars=20)
    # A topic with fewer members than the size gives them all.
    assert len(topic_samples(assignments, texts, [1], size=50, seed=1)[1]) == 10


def test_sample_namer_names_from_the_texts_and_counts_failed_calls():
    from backends.llm.fanout import CallResult

    class FakeCaller:
        def __init__(self):
            self.specs = []

        def call_many(self, specs):
            self.specs += specs
            return [CallResult(value=spec.parse('{"labels": [{"name": "Pasta cooking", "description": '
                                                '"Users ask how to cook pasta."}]}')[0], ok=True)
                    if "pasta" in spec.messages[1]["content"] else CallResult(ok=False) for spec in specs]

    namer = SampleNamer("qwen2.5-coder-0.5b")
    namer._caller = FakeCaller()
    named = namer.names({0: ["how long to boil pasta", "a pasta sauce"], 1: ["fix my python bug"], 2: []})
    assert named == {0: ("Pasta cooking", "Users ask how to cook pasta.")}
    assert (namer.calls, namer.failed) == (2, 1)  # an empty sample costs no call
    prompt = namer._caller.specs[0].messages[1]["content"]
    assert "1. how long to boil pasta\n2. a pasta sauce" in prompt and "2 requests" in prompt


def test_crossfit_bank_is_written_from_the_other_fold_only():
    from core.records import Conversation
    from eval.data import Dataset
    from eval.utility.label_fit import crossfit_folds, fold_of

    ids = [f"conv-{i}" for i in range(80)]
    folds = fold_of(ids)
    assert folds.tolist() == fold_of(list(reversed(ids)))[::-1].tolist()  # by id, not by order
    assert 20 < folds.sum() < 60
    # Each fold's texts carry words no text of the other fold has.
    words = {0: ["zebra stripes savanna", "zebra herd grazing"], 1: ["python code bug", "python import error"]}
    facets = [words[int(f)][i % 2] for i, f in enumerate(folds)]
    dataset = Dataset([Conversation(cid, f"u{i}", None, ()) for i, cid in enumerate(ids)], facets)
    vectors = bag_of_words([t.replace("zebra", "garden").replace("python", "code") for t in facets])
    seen = []
    for fold, subset, subset_vectors, bank in crossfit_folds(dataset, vectors):
        assert subset.conversation_ids == [cid for cid, f in zip(ids, folds) if f == fold]
        assert len(subset_vectors) == len(subset)
        bank_text = " ".join(text for _, text in bank.labels).lower()
        own, other = ("zebra", "python") if fold == 0 else ("python", "zebra")
        assert other in bank_text and own not in bank_text
        assert all(category is None for category, _ in bank.labels)
        seen.append(fold)
    assert seen == [0, 1]
