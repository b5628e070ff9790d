"""Weighted keyword votes (dp_ops/keyword_votes.py, transforms/dp_votes.DPKeywordVotes):
sensitivity, noise, spend, release floor and the Beam stage."""

import math

import apache_beam as beam
import dp_accounting
import numpy as np
import pytest
from apache_beam.testing.util import assert_that

from core.records import ConversationBlock
from dp_ops import keyword_votes as kv
from dp_ops.dp_counts import min_users_to_clear, release_floor
from dp_ops.dp_events import composed_epsilon, event_from_json
from dp_ops.joint_calibration import calibrate_jointly
from dp_ops.run_budget import RunBudget
from tests.conftest import checked, local_pipeline
from tests.support.job_requests import job_requests
from transforms.dp_votes import DPKeywordVotes
from transforms.keyword_histograms import SelectKeywords
from transforms.voted_labels import label_keywords

KEYWORDS = tuple(f"k{j}" for j in range(12))


@pytest.mark.parametrize("keywords_per_vote", [1, 2, 3])
def test_one_users_votes_have_l2_norm_at_most_one(keywords_per_vote):
    rng = np.random.default_rng(4)
    worst = 0.0
    for _ in range(300):
        kept = int(rng.integers(1, 6))  # n_u conversations after bounding, each weighing 1/n_u
        votes = []
        for _ in range(kept):
            cluster = int(rng.integers(0, 2))
            chosen = list(rng.choice(KEYWORDS[:4], size=int(rng.integers(0, 4)), replace=False))
            votes += [(cluster, k, v) for k, v in kv.conversation_votes(chosen, 1.0 / kept, keywords_per_vote)]
        worst = max(worst, float(np.linalg.norm(kv.exact_vote_sums(votes, 2, KEYWORDS))))
    assert worst <= 1.0 + 1e-12
    # the bound is reached: one conversation, all its weight on one keyword
    assert np.linalg.norm(kv.exact_vote_sums([(0, "k0", v) for _, v in kv.conversation_votes(["k0"], 1.0, 3)],
                                             1, KEYWORDS)) == pytest.approx(1.0)


def test_a_conversation_splits_its_weight_over_its_first_distinct_keywords():
    assert kv.conversation_votes(["a", "b", "a", "c"], 0.5, 2) == [("a", 0.5 / math.sqrt(2)), ("b", 0.5 / math.sqrt(2))]
    assert kv.conversation_votes(["a"], 0.25, 3) == [("a", 0.25)]
    assert kv.conversation_votes([], 1.0, 1) == []
    with pytest.raises(ValueError):
        kv.conversation_votes(["a"], 1.5, 1)


def test_vote_sums_refuse_a_keyword_outside_k():
    with pytest.raises(KeyError):
        kv.exact_vote_sums([(0, "not in K", 1.0)], 1, KEYWORDS)


def test_noise_has_the_calibrated_sigma():
    noisy = kv.noisy_vote_sums(np.zeros((200, 200)), sigma=3.0)  # production sampler (PyDP)
    assert noisy.std() == pytest.approx(3.0, rel=0.02) and abs(noisy.mean()) < 0.06


def test_spend_is_one_gaussian_of_the_noise_multiplier():
    spend = kv.vote_spend(2.5, 1e-6)
    assert event_from_json(spend.event) == dp_accounting.GaussianDpEvent(2.5)
    assert spend.noise["sigma"] == 2.5 and spend.sensitivity == 1.0
    assert spend.epsilon == pytest.approx(composed_epsilon([dp_accounting.GaussianDpEvent(2.5)], 1e-6))


@pytest.mark.e2e  # two joint calibrations (PLD)
def test_joint_calibration_composes_the_weighted_votes_to_the_total():
    flags = ("--epsilon_weights", "clustering:4,cluster_sizes:1,keyword_histograms:2", "--kmeans_iterations", "3",
             "--max_conversations_per_user", "5", "--expected_users", "1000")
    weighted = calibrate_jointly(7.0, 1e-6, job_requests(*flags))
    counted = calibrate_jointly(7.0, 1e-6, job_requests(*flags, "--keyword_votes", "count", "--keyword_noise", "gaussian",
                                                        "--max_keyword_partitions_per_user", "10"))
    stage = weighted.stages["keyword_histograms"]
    assert stage.request.sensitivity == 1.0 and stage.pipeline_dp_budget is None
    assert weighted.epsilon_spent <= 7.0 and weighted.epsilon_spent == pytest.approx(7.0, abs=0.01)
    # the same share of the budget, sqrt(L0) = sqrt(10) less noise on each released value
    assert counted.stages["keyword_histograms"].noise_std_parameter / stage.noise_std_parameter == pytest.approx(
        math.sqrt(10), rel=0.02)


@pytest.mark.parametrize("rate,candidates", [(0.05, 363), (0.2, 40)])
def test_pure_noise_releases_about_the_stated_false_keywords_per_topic(rate, candidates):
    sigma, topics = 2.0, 4000
    floor = release_floor({"kind": "gaussian", "sigma": sigma}, candidates, rate)
    noise = kv.noisy_vote_sums(np.zeros((topics, candidates)), sigma, noise_seed=11)
    per_topic = (noise >= floor).sum(axis=1).mean()
    expected_sd = math.sqrt(rate / topics)  # Poisson count per topic, averaged over the topics
    assert abs(per_topic - rate) < 4 * expected_sd


def test_min_users_is_the_floor_rounded_up():
    assert min_users_to_clear(6.2) == 7 and min_users_to_clear(7.0) == 7 and min_users_to_clear(0.3) == 1


def test_label_falls_back_to_centroid_keywords_and_says_so():
    assert label_keywords(["a"], ["b"], 5) == (["a"], "dp_keyword_histogram", None)
    assert label_keywords(["a"], ["b"], 5, "Cooking") == (["a"], "dp_keyword_histogram", "Cooking")
    assert label_keywords([], ["b"], 5, "Cooking") == ([], "dp_category_votes", "Cooking")
    assert label_keywords([], ["b", "c"], 1) == (["b"], "nearest_keywords_to_dp_centre", None)
    assert label_keywords([], None, 5) == ([], "none", None)


class _FirstKeywords:
    def setup(self):
        pass

    def select(self, facets, embeddings, max_keywords):
        return [["k1", "k2", "k3"][:max_keywords] for _ in facets]


def test_beam_stage_releases_every_kept_partition_with_the_seeded_noise():
    block = ConversationBlock(["c0", "c1", "c2"], ["u0", "u0", "u1"], np.array([0.5, 0.5, 1.0]), ["x"] * 3,
                              np.zeros((3, 4), dtype=np.float32), cluster_ids=np.array([0, 2, 2], dtype=np.int64))
    budget = RunBudget(1e-6)
    exact = np.zeros((3, len(KEYWORDS)))
    exact[0, 1], exact[2, 1] = 0.5, 1.5
    expected = kv.noisy_vote_sums(exact, 1.5, noise_seed=5)

    def seeded_noise_on_every_kept_partition(released):
        histogram = dict(released)
        assert set(histogram) == {(c, k) for c in (0, 2) for k in KEYWORDS}
        assert all(histogram[(c, k)] == pytest.approx(expected[c, j]) for c in (0, 2) for j, k in enumerate(KEYWORDS))

    with local_pipeline() as pipeline:
        votes = pipeline | beam.Create([block]) | SelectKeywords(_FirstKeywords(), KEYWORDS, 1, weighted=True)
        kept = pipeline | "kept" >> beam.Create([0, 2])
        stage = DPKeywordVotes(3, KEYWORDS, 1.5, 1e-6, kept, budget, noise_seed=5)
        assert_that(votes.output | stage, checked(seeded_noise_on_every_kept_partition), label="histogram")
    assert stage.registered and [s.stage for s in budget.entries] == ["keyword_histograms"]


@pytest.mark.e2e  # 2 x 40,000 draws from the production sampler
def test_the_worst_user_never_shows_more_than_the_accounted_epsilon():
    """The worst neighbour: a user with one conversation (weight 1) voting one keyword moves one
    partition by exactly the sensitivity 1. An audit on that shift must stay under the event's epsilon;
    a quarter of the noise must exceed it (the audit can see a leak)."""
    from tests.support.privacy_audit import epsilon_lower_bound
    spend = kv.vote_spend(0.9, 1e-5)
    claimed = composed_epsilon([event_from_json(spend.event)], 1e-5)
    votes = kv.conversation_votes(["k0"], 1.0, 1)
    shift = kv.exact_vote_sums([(0, k, v) for k, v in votes], 1, KEYWORDS)[0, 0]
    assert shift == 1.0
    samples = 40000
    without = kv.noisy_vote_sums(np.zeros(samples), spend.noise["sigma"])
    with_user = kv.noisy_vote_sums(np.full(samples, shift), spend.noise["sigma"])
    assert epsilon_lower_bound(without, with_user, 1e-5) <= claimed
    without = kv.noisy_vote_sums(np.zeros(samples), spend.noise["sigma"] / 4, noise_seed=1)
    with_user = kv.noisy_vote_sums(np.full(samples, shift), spend.noise["sigma"] / 4, noise_seed=2)
    assert epsilon_lower_bound(without, with_user, 1e-5) > claimed


def test_report_says_where_each_label_came_from_and_how_many_users_a_label_needs():
    from publishing.report import ReleasePrivacy, build_report, labelling_section
    from publishing.report_html import render_report, table_rows
    named = {0: {"name": "Python", "description": "d", "keywords": ["python"], "label_source": "dp_keyword_histogram"},
             1: {"name": "Tea", "description": "d", "keywords": ["tea"], "label_source": "nearest_keywords_to_dp_centre"},
             2: {"name": "Unlabelled topic", "description": "d", "keywords": [], "label_source": "none"}}
    labelling = labelling_section(min_users_to_clear(6.5), 6.5, 363, 0.05)
    report = build_report(named, {0: 90.0, 1: 40.0, 2: 30.0}, ReleasePrivacy([], 5, labelling=labelling), {})
    assert [t["label_source"] for t in report["topics"]] == ["dp_keyword_histogram", "nearest_keywords_to_dp_centre",
                                                              "none"]
    assert report["privacy"]["min_users_to_label_a_topic"] == 7
    assert "fewer than 7 users cannot be labelled" in report["privacy"]["labelling_note"]
    page = render_report(report)
    assert 'data-source="nearest_keywords_to_dp_centre"' in page and "fewer than 7 users" in page
    assert [row["label_source"] for row in table_rows(report)][1] == "nearest_keywords_to_dp_centre"
    assert labelling_section(None, None, 363, 0.05) == {}


def test_a_centroid_labelled_topic_does_not_claim_its_conversations_chose_its_keywords():
    from backends.offline import KeywordClusterNamer
    from transforms.name_clusters import name_topic
    namer = KeywordClusterNamer()
    _, description = namer.name(["tea", "coffee"])
    assert "chose them (DP counts)" in description
    voted = name_topic(namer, ["tea", "coffee"], "dp_keyword_histogram", None)
    fallback = name_topic(namer, ["tea", "coffee"], "nearest_keywords_to_dp_centre", None)
    assert voted["description"] == description and voted["label_source"] == "dp_keyword_histogram"
    assert "chose them" not in fallback["description"]
    assert "nearest the topic's DP centre" in fallback["description"]
    assert fallback["description"].startswith("Requests about tea and coffee.")
