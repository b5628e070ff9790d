"""Facets (dp_ops/facets.py, backends/facet_set.py, transforms/facet_histograms.py): the declarations,
the per-record classifiers, the two user-level Gaussian releases per facet and their report section."""

import collections

import numpy as np
import pytest

from backends.facet_set import Answer, FacetClassifier, FacetDeclaration, load_facet_set
from backends.keyword_categories import KeywordCategories
from config.embedding import Encoder
from core.records import ConversationBlock
from dp_ops import facets as fa
from dp_ops.fixed_histogram import histogram_rows
from dp_ops.joint_calibration import calibrate_jointly
from dp_ops.run_budget import RunBudget
from tests.dp_ops.test_theme_histogram import _spend_of
from tests.support.facet_files import assert_facet_file_refused
from tests.support.job_requests import job_requests
from transforms.facet_histograms import AnswerFacetsFn, FacetHistograms

KIND = FacetDeclaration("kind", "What kind?", "nearest_description",
                        (Answer("coding", "Coding", ("code",)), Answer("math", "Math", ("math",)),
                         Answer("other", "Other")), other="other", min_similarity=0.5)
WEIGHTS = {"clustering": 4, "cluster_sizes": 1, "keyword_histograms": 2, "user_count": 0.1, "themes": 1,
           "facets": 1, "facet_topics": 1}


def _vectors(phrases):
    """A fixed public 'model': code on axis 0, math on axis 1, anything else on axis 3."""
    axis = {"code": 0, "math": 1}
    return np.array([np.eye(4)[axis.get(p, 3)] for p in phrases])


def test_the_bundled_facets_are_language_request_kind_and_concern_and_a_bad_file_is_refused(tmp_path):
    bundled = load_facet_set()
    assert [f.name for f in bundled.facets] == ["language", "request_kind", "concern"]
    language = bundled.facets[0]
    assert len(language.answers) == 21 and "es" in language.answer_ids and language.other == "other"
    assert [i for i, _ in bundled.select(["concern", "language"])] == [0, 2]  # the set's order fixes the streams
    with pytest.raises(ValueError, match="unknown facet"):
        bundled.select(["mood"])
    assert_facet_file_refused(tmp_path, '{"facets": [{"name": "x", "question": "?", "classifier": "language", '
                                        '"answers": [{"id": "en"}, {"id": "unknown"}], "other": "en"}]}', "unknown")


def test_language_detection_works_offline_on_planted_languages():
    classifier = FacetClassifier(load_facet_set().facets[0])
    assert classifier.answer("¿Cómo puedo aprender a programar en Python rápidamente?", None) == "es"
    assert classifier.answer("Wie kann ich mein Fahrrad\nreparieren?", None) == "de"
    assert classifier.answer("How do I repair my bicycle chain?", None) == "en"
    assert classifier.answer("Hur lagar jag min cykel?", None) == "other"  # Swedish: not among the answers
    with pytest.raises(ValueError):
        classifier.answer("   ", None)


def test_nearest_description_and_concern_levels_one_conversation_at_a_time():
    kind = FacetClassifier(KIND)
    kind.setup(_vectors, ())
    rng = np.random.default_rng(3)
    embeddings = rng.normal(size=(200, 4))
    alone = [kind.answer("", e) for e in embeddings]
    unit = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    by_hand = ["coding" if max(u[0], u[1]) >= 0.5 and u[0] >= u[1] else "math" if u[1] >= 0.5 else "other"
               for u in unit]
    assert alone == by_hand and set(alone) == {"coding", "math", "other"}
    concern = FacetClassifier(FacetDeclaration(
        "concern", "?", "sensitive_similarity",
        (Answer("none", "None"), Answer("low", "Low", threshold=0.4), Answer("high", "High", threshold=0.8))))
    concern.setup(_vectors, ("math",))
    assert [concern.answer("", np.array([1.0, s, 0, 0])) for s in (0.0, 0.5, 2.0)] == ["none", "low", "high"]
    with pytest.raises(ValueError):
        concern.answer("", np.array([np.nan, 0, 0, 0]))


def _blocks(n=400, seed=0):
    """Conversations on two topics (clusters 0 and 1) of 'code' or 'math' embeddings, one user each."""
    rng = np.random.default_rng(seed)
    answers = rng.integers(0, 2, size=n)
    embeddings = np.eye(4)[answers] + rng.normal(scale=0.01, size=(n, 4))
    block = ConversationBlock([f"c{i}" for i in range(n)], [f"u{i}" for i in range(n)], np.ones(n),
                              ["text"] * n, embeddings, cluster_ids=np.array([i % 2 for i in range(n)]))
    return [block], answers


def _stage(multipliers, budget, kept=(0, 1), seed=None, fail_on=None):
    answers = AnswerFacetsFn((KIND,), ("code", "math"), KeywordCategories({}), Encoder("unused"))
    stage = FacetHistograms([(0, KIND)], answers, 3, list(kept), multipliers, 1e-6, budget, noise_seed=seed)

    def setup():
        classifier = FacetClassifier(KIND)
        classifier.setup(_vectors, ())
        if fail_on is not None:
            real = classifier.answer
            classifier.answer = lambda text, e: (_ for _ in ()).throw(RuntimeError("boom")) if (
                text == fail_on) else real(text, e)
        stage._fn.classifiers = [classifier]
        stage._fn._counters = collections.defaultdict(lambda: type("C", (), {"inc": lambda self: None})())
    stage._fn.setup = setup
    return stage


def test_the_exact_baseline_counts_each_answer_overall_and_per_kept_topic():
    blocks, answers = _blocks()
    out = _stage(None, None, kept=(1,)).local(blocks).section["kind"]
    overall = {row["answer"]: row["size"] for row in out["overall"]}
    assert overall == {"coding": float((answers == 0).sum()), "math": float((answers == 1).sum()), "other": 0.0,
                       "unknown": 0.0}
    assert list(out["by_topic"]) == ["1"]  # only the kept topic
    topic = {row["answer"]: row["size"] for row in out["by_topic"]["1"]}
    assert topic["coding"] == float((answers[1::2] == 0).sum())
    assert out["question"] == "What kind?" and out["answers"] == ["coding", "math", "other", "unknown"]
    # The declaration's public labels travel with the release, for the page ("unknown" is its own label).
    assert out["labels"] == {"coding": "Coding", "math": "Math", "other": "Other", "unknown": "unknown"}


def test_a_failing_classifier_makes_its_record_unknown_and_is_counted_without_touching_the_others():
    blocks, answers = _blocks(n=50)
    blocks[0].facets[7] = "bad"
    out = _stage(None, None, fail_on="bad").local(blocks)
    overall = {row["answer"]: row["size"] for row in out.section["kind"]["overall"]}
    assert overall["unknown"] == 1.0 and out.unknown == {"kind": 1}
    assert overall["coding"] + overall["math"] == 49.0  # every other record still answers
    rest = _stage(None, None).local(_blocks(n=50)[0])
    rest_overall = {row["answer"]: row["size"] for row in rest.section["kind"]["overall"]}
    expected = dict(rest_overall, unknown=1.0)
    expected["coding" if answers[7] == 0 else "math"] -= 1
    assert overall == expected


@pytest.mark.e2e  # a joint calibration (PLD)
def test_facets_are_two_stages_of_the_joint_calibration_and_the_total_meets_the_budget():
    flags = ("--kmeans_iterations", "2", "--max_conversations_per_user", "5", "--expected_users", "1000",
             "--epsilon_weights", ",".join(f"{stage}:{weight}" for stage, weight in WEIGHTS.items()))
    requests = job_requests(*flags, "--facets", "language,concern")
    assert [(r.stage, r.releases) for r in requests][-2:] == [("facets", 2), ("facet_topics", 2)]
    assert not {"facets", "facet_topics"} & {r.stage for r in job_requests(*flags)}
    joint = calibrate_jointly(7.0, 1e-6, requests)
    budget = RunBudget(1e-6)
    for stage in ("clustering", "cluster_sizes", "keyword_histograms"):
        budget.register(_spend_of(joint, stage), joint.stages[stage].event())
    multipliers = (joint.stages["facets"].noise_multiplier, joint.stages["facet_topics"].noise_multiplier)
    answers = AnswerFacetsFn((KIND, KIND), ("code",), KeywordCategories({}), Encoder("unused"))
    facets = FacetHistograms([(0, KIND), (2, KIND)], answers, 3, [0], multipliers, 1e-6, budget)
    assert 7.0 - 2e-3 <= budget.epsilon() <= 7.0  # facets on: the total is still the budget
    entries = [(e.stage, e.noise["sigma"]) for e in budget.entries if e.stage.startswith("facet")]
    assert entries == [("facets", multipliers[0]), ("facet_topics", multipliers[1])] * 2
    assert {s.spend.noise["per"] for s in facets.stages} == {"kind answer sum, in users",
                                                             "(topic, kind answer) sum, in users"}
    streams = {s._noise_stream for s in facets.stages}
    assert streams == {fa.NOISE_STREAM, fa.NOISE_STREAM + 1, fa.NOISE_STREAM + 4, fa.NOISE_STREAM + 5}


def test_the_noise_has_the_calibrated_scale_and_the_intervals_cover():
    """Many seeded releases of the same votes: each cell's noise has mean 0 and sd sigma, the 95%
    size intervals cover the truth about 95% of the time, and so do the shares' (Fieller's method)."""
    blocks, answers = _blocks(n=600)
    truth = _stage(None, None).local(blocks).section["kind"]
    true_sizes = {row["answer"]: row["size"] for row in truth["by_topic"]["0"]}
    true_shares = {row["answer"]: row["share"] for row in truth["by_topic"]["0"]}
    sigma = 4.0
    errors, covered, share_covered = [], 0, 0
    runs = 300
    for seed in range(runs):
        section = _stage((sigma, sigma), None, seed=seed).local(blocks).section["kind"]
        rows = {row["answer"]: row for row in section["by_topic"]["0"]}
        errors.append(rows["coding"]["size"] - true_sizes["coding"])
        covered += rows["coding"]["low"] <= true_sizes["coding"] <= rows["coding"]["high"]
        share_covered += rows["math"]["share_low"] <= true_shares["math"] <= rows["math"]["share_high"]
        assert section["sigma"] == {"overall": sigma, "by_topic": sigma}
    assert abs(np.mean(errors)) < 4 * sigma / np.sqrt(runs)
    assert np.std(errors) == pytest.approx(sigma, rel=0.15)
    assert 0.9 <= covered / runs <= 0.99 and 0.88 <= share_covered / runs <= 0.995


def test_rows_share_and_interval_shape():
    rows = histogram_rows({"a": 30.0, "b": 10.0, "c": -2.0}, 1.0)
    assert [r["answer"] for r in rows] == ["a", "b", "c"]
    assert rows[0]["share"] == pytest.approx(30 / 38) and rows[2]["share"] == 0.0 and rows[2]["low"] == 0.0
    assert set(rows[0]) == {"answer", "size", "low", "high", "share", "share_low", "share_high"}
    assert rows[0]["share_low"] < rows[0]["share"] < rows[0]["share_high"] <= 1.0


def test_the_long_format_rows_carry_overall_and_per_topic_cells_with_their_lineage():
    from publishing.facet_rows import FACET_COLUMNS, facet_rows
    section = {"overall": histogram_rows({"es": 5.0, "unknown": 1.0}, 1.0),
               "by_topic": {"3": histogram_rows({"es": 2.0, "unknown": 0.0}, 1.0)}}
    rows = facet_rows("2026-11-02", {"topics": [{"id": 3, "lineage": "2026-11-01#0"}], "facets": {"language": section}})
    assert [tuple(row) for row in rows] == [FACET_COLUMNS] * 4
    assert [(r["topic"], r["lineage"], r["answer"]) for r in rows] == [
        (None, None, "es"), (None, None, "unknown"), (3, "2026-11-01#0", "es"), (3, "2026-11-01#0", "unknown")]
    assert facet_rows("2026-11-02", {"topics": []}) == []
