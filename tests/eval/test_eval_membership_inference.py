"""eval/audit/membership_inference.py: AUC, its interval and the ROC curve on synthetic scores."""

import statistics

import numpy as np
import pytest

from eval.audit import membership_inference as mi


def test_auc_extremes_and_ties():
    assert mi.roc_auc([3, 4, 5], [0, 1, 2]) == 1.0
    assert mi.roc_auc([0, 1, 2], [3, 4, 5]) == 0.0
    assert mi.roc_auc([1, 1, 1], [1, 1]) == 0.5


def test_auc_by_hand():
    # pairs (in, out): 0.8 beats 0.1 and 0.3; 0.4 beats 0.1 and 0.3; 0.3 beats 0.1 and ties 0.3
    # -> (2 + 2 + 1.5) / 9
    assert mi.roc_auc([0.8, 0.4, 0.3], [0.1, 0.3, 0.9]) == pytest.approx(5.5 / 9)


def test_auc_of_shifted_gaussians_matches_theory_and_ci_covers_it():
    rng = np.random.default_rng(3)
    shift = 1.0
    scores_in, scores_out = rng.normal(shift, 1, 2000), rng.normal(0, 1, 2000)
    expected = statistics.NormalDist().cdf(shift / np.sqrt(2))  # 0.760
    auc = mi.roc_auc(scores_in, scores_out)
    assert auc == pytest.approx(expected, abs=0.02)
    low, high = mi.bootstrap_auc_ci(scores_in, scores_out, resamples=300)
    assert low < expected < high and high - low < 0.06


def test_ci_of_indistinguishable_runs_contains_half():
    rng = np.random.default_rng(4)
    low, high = mi.bootstrap_auc_ci(rng.normal(size=200), rng.normal(size=200), resamples=300)
    assert low < 0.5 < high


def test_roc_curve_runs_from_origin_to_one_and_integrates_to_auc():
    scores_in, scores_out = [0.8, 0.4, 0.3], [0.1, 0.3, 0.9]
    fpr, tpr = mi.roc_curve(scores_in, scores_out)
    assert (fpr[0], tpr[0]) == (0.0, 0.0) and (fpr[-1], tpr[-1]) == (1.0, 1.0)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    assert np.trapezoid(tpr, fpr) == pytest.approx(5.5 / 9)


def test_attack_score_is_max_cosine_or_minus_one():
    vectors = {"a": np.array([1.0, 0.0]), "b": np.array([0.6, 0.8])}
    embed = lambda texts: np.stack([vectors[t] for t in texts])  # noqa: E731
    assert mi.attack_score(np.array([0.0, 1.0]), ["a", "b"], embed) == pytest.approx(0.8)
    assert mi.attack_score(np.array([0.0, 1.0]), [], embed) == -1.0


def test_pooled_runs_are_the_run_sets_concatenated():
    a = {"membership": [True, False], "scores": {"urania": [0.9, 0.1], "simple_clio": [0.5, 0.5]}}
    b = {"membership": [False, True, True], "scores": {"urania": [0.2, 0.8, 0.7], "simple_clio": [0.4, 0.6, 0.3]}}
    pooled = mi.pool_results([a, b])
    assert pooled["membership"] == [True, False, False, True, True]
    assert pooled["scores"]["urania"] == [0.9, 0.1, 0.2, 0.8, 0.7]
    summary = mi.summarise(pooled, resamples=50)
    assert summary["urania"]["auc"] == 1.0 and summary["urania"]["runs_in"] == 3


def test_pooling_keeps_only_the_pipelines_every_run_set_scored():
    a = {"membership": [True, False], "scores": {"urania": [0.9, 0.1], mi.SUMMARIES_ONLY: [0.3, 0.2]}}
    b = {"membership": [False, True], "scores": {"urania": [0.2, 0.8]}}
    pooled = mi.pool_results([a, b])
    assert pooled["scores"] == {"urania": [0.9, 0.1, 0.2, 0.8]}
    assert mi.summarise(pooled, resamples=20)["urania"]["runs_out"] == 2


def test_with_exemplars_the_same_release_is_also_scored_without_them(monkeypatch):
    import dataclasses
    topic = {"name": "Health", "description": "About health.", "keywords": ["sleep"],
             "exemplars": [{"text": "near the target", "similarity_to_centre": 0.7}]}
    monkeypatch.setattr(mi, "run_urania", lambda *args, **kwargs: {"topics": [topic]})
    monkeypatch.setattr(mi, "run_simple_clio", lambda *args, **kwargs: {"topics": []})
    # The exemplar is the released text nearest the target: 0.9 with it, 0.1 (the summary) without.
    monkeypatch.setattr(mi, "TextEmbedder", lambda model: lambda texts: np.array(
        [[0.9, 0.0] if t == "near the target" else [0.1, 0.0] for t in texts]))
    pool = mi.Pool([f"c{i}" for i in range(5)], [f"u{i}" for i in range(5)], ["x"] * 5, np.zeros((5, 2)))
    config = dataclasses.replace(mi.UraniaConfig(), exemplars_per_topic=1)
    result = mi.run_attack(pool, np.array([1.0, 0.0]), runs=4, n=3, config=config, clio_clusters=2)
    assert result["scores"]["urania"] == pytest.approx([0.9] * 4)
    assert result["scores"][mi.SUMMARIES_ONLY] == pytest.approx([0.1] * 4)
    off = mi.run_attack(pool, np.array([1.0, 0.0]), runs=2, n=3, config=mi.UraniaConfig(), clio_clusters=2)
    assert set(off["scores"]) == {"urania", "simple_clio"}
