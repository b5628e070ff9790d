"""Issue 41 item 3: each released keyword's and category's share of its topic's DP votes, with a 95%
interval (post-processing of the votes' Gaussian release), and names that stand for their topic."""

import math

import numpy as np
import pytest

from backends.label_evidence import MIXED_PREFIX, NAME_SHARE, labelled_topic
from core.label_sources import CATEGORY_SOURCE, HISTOGRAM_SOURCE
from dp_ops.fixed_histogram import Z_95
from dp_ops.keyword_votes import CategoryVote
from publishing.report_html import render_report
from tests.support.report_fixtures import sample_report, themed_topics
from transforms.voted_labels import vote_shares

NOISE = {"kind": "gaussian", "sigma": 2.0, "std": 2.0}
CATEGORY_OF = {"microservices": "Software engineering", "docker": "Software engineering", "tax": "Money"}


def _namer(keywords):
    return f"Software engineering: {keywords[0]}", f"Requests about {keywords[0]}."


def test_shares_are_each_noisy_vote_over_the_topics_votes_with_fiellers_interval():
    values = [("microservices", 12.0), ("docker", 3.0), ("tax", -1.0),
              (CategoryVote("Software engineering"), 9.0), (CategoryVote("Money"), 21.0)]
    shares = vote_shares(values, ["microservices", "docker"], "Software engineering", NOISE)
    lead, category = shares["keywords"][0], shares["category"]
    # By hand: 12 / (12 + 3 - 1); the interval is the p with (12 - 14 p)^2 <= 1.96^2 sigma^2 (1 - 2p + 3p^2),
    # k = 3 keywords (dp_ops.fixed_histogram.share_interval): its lower end solves it, its upper one is 1.
    p = 12 / 14
    z2 = (Z_95 * 2.0) ** 2
    a, b, c = 14 ** 2 - 3 * z2, 12 * 14 - z2, 12 ** 2 - z2
    low = (b - math.sqrt(b * b - a * c)) / a
    assert (lead["keyword"], lead["size"]) == ("microservices", 12.0)
    assert lead["share"] == pytest.approx(p, abs=1e-6)
    assert lead["share_low"] == pytest.approx(low, abs=1e-6) and 0.3 < low < p
    assert lead["share_high"] == 1.0  # (12 - 14)^2 = 4 <= 1.96^2 x 4 x 2: a share of 1 is within the noise
    assert category["category"] == "Software engineering" and category["share"] == pytest.approx(0.3, abs=1e-6)
    assert [row["keyword"] for row in shares["keywords"]] == ["microservices", "docker"]


def test_a_keyword_share_is_over_the_topics_candidates_only():
    values = [("microservices", 6.0), ("docker", 2.0), ("tax", 8.0)]
    shares = vote_shares(values, ["microservices"], None, None, candidates=frozenset({"microservices", "docker"}))
    assert shares["keywords"][0]["share"] == pytest.approx(0.75) and shares["category"] is None


def test_the_share_interval_covers_the_true_share_about_95_percent_of_seeded_draws():
    true = np.array([40.0, 25.0, 15.0, 10.0, 5.0, 3.0, 2.0, 0.0])
    columns = [CategoryVote(f"c{i}") for i in range(len(true))]
    sigma, draws = 3.0, 2000
    rng = np.random.default_rng(41)
    covered = {0: 0, 3: 0}
    for _ in range(draws):
        noisy = true + rng.normal(0.0, sigma, true.shape)
        values = list(zip(columns, noisy.tolist()))
        for i in covered:
            row = vote_shares(values, [], f"c{i}", {"std": sigma})["category"]
            covered[i] += row["share_low"] <= true[i] / true.sum() <= row["share_high"]
    for i, hits in covered.items():
        assert 0.93 <= hits / draws <= 0.97, (i, hits / draws)


def _shares(keyword_high: float, category_high: float) -> dict:
    row = {"size": 5.0, "low": 1.0, "high": 9.0, "share": 0.05, "share_low": 0.0}
    return {"keywords": [{**row, "keyword": "microservices", "share_high": keyword_high},
                         {**row, "keyword": "docker", "share_high": keyword_high}],
            "category": {**row, "category": "Software engineering", "share_high": category_high}}


def test_a_name_whose_keyword_and_category_are_shown_to_hold_a_small_share_is_mixed():
    low = NAME_SHARE - 0.01
    topic = labelled_topic(_namer, ["microservices", "docker"], HISTOGRAM_SOURCE, CATEGORY_OF, frozenset(),
                           "Software engineering", None, _shares(low, low))
    assert topic["name"] == f"{MIXED_PREFIX}microservices, docker"
    assert "microservices 5%" in topic["description"]
    assert [row["keyword"] for row in topic["keyword_shares"]] == ["microservices", "docker"]
    assert topic["category_share"]["category"] == "Software engineering"


@pytest.mark.parametrize("keyword_high, category_high", [(NAME_SHARE, 0.0), (0.0, NAME_SHARE)])
def test_a_keyword_or_category_that_may_hold_a_meaningful_share_keeps_the_votes_name(keyword_high, category_high):
    topic = labelled_topic(_namer, ["microservices", "docker"], HISTOGRAM_SOURCE, CATEGORY_OF, frozenset(),
                           "Software engineering", None, _shares(keyword_high, category_high))
    assert topic["name"] == "Software engineering: microservices"


def test_a_category_name_needs_the_categorys_share():
    def named(category_high):
        return labelled_topic(_namer, ["microservices"], CATEGORY_SOURCE, CATEGORY_OF, frozenset(),
                              "Software engineering", None, _shares(1.0, category_high))["name"]
    assert named(NAME_SHARE) == "Software engineering"
    # The keywords of a category-named topic are guesses: their share does not keep the category's name.
    assert named(NAME_SHARE - 0.01).startswith(MIXED_PREFIX)


def test_the_page_shows_each_keywords_share_with_its_interval_escaped():
    topics = themed_topics()
    keyword = "<b onclick=evil>"
    topics[0] = {**topics[0], "keywords": [keyword], "keyword_shares": [
        {"keyword": keyword, "size": 4.0, "low": 0.1, "high": 7.9, "share": 0.12, "share_low": 0.03,
         "share_high": 0.21}]}
    page = render_report(sample_report(topics))
    assert "<b onclick" not in page
    assert "&lt;b onclick=evil&gt; 12% (3%\u201321%)" in page
