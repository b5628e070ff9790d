"""Centroid keywords (--keyword_mode): nearest keywords to the DP centres, at zero extra budget."""

import json
import math
import os

import numpy as np
import pytest

from backends.keyword_categories import KeywordCategories
from backends.keyword_set import DEFAULT_KEYWORD_SET, keyword_set_document, load_keyword_set, write_keyword_set
from beam_jobs.insights import run
from config.embedding import Encoder
from core.spend import MechanismSpend
from publishing.report import keyword_agreement
from tests.support.sample_folder import sample_folder
from transforms.centroid_keywords import nearest_keywords


def test_nearest_keywords_are_the_most_similar_per_centre():
    keyword_points = np.eye(3, dtype=np.float32)
    centres = np.array([[0.9, 0.1, 0.0], [0.0, 0.2, 0.98]], dtype=np.float32)
    assert nearest_keywords(centres, keyword_points, ("a", "b", "c"), 2) == [["a", "b"], ["c", "b"]]


def test_agreement_is_jaccard_per_topic_and_its_mean():
    agreement = keyword_agreement({0: ["a", "b"], 1: ["x"], 2: []}, {0: ["b", "c"], 1: ["x"], 2: ["z"]})
    per_topic = {t["id"]: t for t in agreement["per_topic"]}
    assert per_topic[0]["jaccard"] == pytest.approx(1 / 3) and per_topic[0]["shared"] == ["b"]
    assert per_topic[1]["jaccard"] == 1.0 and per_topic[2]["jaccard"] == 0.0
    assert agreement["mean_jaccard"] == pytest.approx((1 / 3 + 1 + 0) / 3)
    assert agreement["topics_with_a_shared_keyword"] == 2


# The releases beside the topics' (themes, facets, decoded names) are off: these tests are of the keyword modes' spend.
FLAGS = ["--seed", "5", "--num_clusters", "8", "--min_cluster_size", "5", "--noise_seed", "1",
         "--themes", "false", "--facets", "none", "--centre_decoder", "false"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    folder, data = sample_folder(tmp_path_factory, "centroid", 900, 600, seed=13, file="conversations.jsonl")
    keywords = str(folder / "kw.json")
    # A DP-built set (its recorded spend is what the report must add; the words are the bundled list).
    spend = MechanismSpend(stage="keyword_set", mechanism="PipelineDP partition selection per term", epsilon=0.5,
                           delta=1e-7, sensitivity=5.0, noise={"kind": "partition_selection"})
    write_keyword_set(keywords, keyword_set_document(list(load_keyword_set(DEFAULT_KEYWORD_SET).keywords), "llm",
                                                     {}, {}, [spend], ledger_run_id="keyword-set-centroid",
                                                     ledger_date="2026-11-01"))
    return folder, data, keywords


def _categories(keywords_path):
    """The run's {keyword: category} and sensitive categories, as the job resolves them."""
    categories = KeywordCategories.of_keyword_set(load_keyword_set(keywords_path), Encoder("all-MiniLM-L6-v2"))
    return categories.category_of, categories.sensitive


def _report(folder, data, keywords, mode):
    output = str(folder / mode)
    assert run(["--input", data, "--output", output, "--keyword_set", keywords, "--keyword_mode", mode, *FLAGS]) == 0
    return (json.load(open(os.path.join(output, "release", "report.json"))),
            json.load(open(os.path.join(output, "private", "run_stats.json"))))


@pytest.mark.e2e
def test_centroid_mode_spends_no_keyword_budget_and_the_total_includes_the_keyword_set(sample):
    report, stats = _report(*sample, "centroid")
    stages = [m["stage"] for m in report["privacy"]["mechanisms"]]
    assert stages == ["keyword_set", "user_count", "clustering", "cluster_sizes"]
    # --epsilon 7 is shared by k-means and the sizes alone (no histogram runs); the set's own (0.5, 1e-7)
    # composes on top with PLD, at the night's delta plus the set's.
    privacy = report["privacy"]
    assert privacy["composition"] == "PLD" and all(m["event"] for m in privacy["mechanisms"])
    assert 7.0 < privacy["epsilon"] < 7.5 and privacy["delta"] == pytest.approx(1.1e-6)
    kmeans = next(m for m in privacy["mechanisms"] if m["stage"] == "clustering")
    assert kmeans["delta"] == pytest.approx(1e-6)
    assert report["config"]["keyword_mode"] == "centroid"
    # Every topic is a centre guess: its 5 nearest keywords less any of a sensitive category.
    category_of, sensitive = _categories(sample[2])
    assert report["topics"] and all(1 <= len(t["keywords"]) <= 5 for t in report["topics"])
    assert not any(category_of.get(k) in sensitive for t in report["topics"] for k in t["keywords"])
    assert {t["label_evidence"] for t in report["topics"]} <= {"approximate", "unverified"}
    assert "keyword_agreement" not in report and "keyword_pairs_selected" not in stats
    assert {t["label_source"] for t in report["topics"]} == {"nearest_keywords_to_dp_centre"}
    assert "min_users_to_label_a_topic" not in privacy


@pytest.mark.e2e
def test_both_mode_reports_agreement_and_spends_the_histogram_budget(sample):
    report, stats = _report(*sample, "both")
    stages = [m["stage"] for m in report["privacy"]["mechanisms"]]
    assert "keyword_histograms" in stages and "keyword_set" in stages
    assert report["privacy"]["composition"] == "PLD" and 7.0 < report["privacy"]["epsilon"] < 7.5
    agreement = report["keyword_agreement"]
    assert len(agreement["per_topic"]) == len(report["topics"])
    assert 0.0 <= agreement["mean_jaccard"] <= 1.0
    # The 5 nearest keywords less any of a sensitive category: a guess, like a centre-guessed label.
    category_of, sensitive = _categories(sample[2])
    assert all(len(t["centroid_keywords"]) <= 5 for t in report["topics"])
    assert not any(category_of.get(k) in sensitive for t in report["topics"] for k in t["centroid_keywords"])
    per_topic = {t["id"]: t for t in agreement["per_topic"]}
    for topic in report["topics"]:
        a = set(topic["keywords"]) if topic["label_source"] == "dp_keyword_histogram" else set()
        b = set(topic["centroid_keywords"])
        assert per_topic[topic["id"]]["jaccard"] == pytest.approx(len(a & b) / len(a | b))
    assert stats["keyword_pairs_selected"] > 0
    # Every topic says where its label came from; the histogram's own keywords are what agreement compares.
    sources = {t["id"]: t["label_source"] for t in report["topics"]}
    assert set(sources.values()) <= {"dp_keyword_histogram", "dp_category_votes", "nearest_keywords_to_dp_centre"}
    for topic in report["topics"]:
        if sources[topic["id"]] == "nearest_keywords_to_dp_centre":
            # A centre guess releases none of a sensitive category's keywords (backends/label_evidence.py).
            assert topic["keywords"] == [k for k in topic["centroid_keywords"] if category_of.get(k) not in sensitive]
            assert per_topic[topic["id"]]["jaccard"] == 0.0
    privacy = report["privacy"]
    assert privacy["min_users_to_label_a_topic"] == math.ceil(privacy["keyword_release_floor"])
    assert f"fewer than {privacy['min_users_to_label_a_topic']} users" in privacy["labelling_note"]


@pytest.mark.e2e
def test_both_mode_lists_no_sensitive_centroid_keyword():
    """The centroid keywords are a centre guess like any (backends/label_evidence.py): a sensitive
    category's words nearest a topic's centre have no vote of its own behind them."""
    from backends.embedding import embed_texts
    from backends.offline import EmbeddingKeywordSelector
    from config.keywords import KeywordParams
    from transforms.dp_cluster_sizes import KeptClusters
    from transforms.dp_kmeans import DPKMeansOutput
    from transforms.engine import LocalEngine
    from transforms.topic_keywords import PublicKeywords, TopicKeywords, VoteNoise, VoteSample
    model = "all-MiniLM-L6-v2"
    encoder = Encoder(model)
    keywords = ("money laundering", "tax evasion", "python", "unit testing", "vegetables")
    categories = KeywordCategories({"money laundering": "Crime and fraud", "tax evasion": "Crime and fraud",
                                    "python": "Python coding", "unit testing": "Python coding",
                                    "vegetables": "Food and cooking"}, sensitive=frozenset({"Crime and fraud"}))
    centres = embed_texts(model, ["laundering money through offshore accounts", "python unit tests"])
    params = KeywordParams(keyword_mode="both", keywords_per_cluster=2, keyword_candidates=0, label_fallback="centroid",
                           keyword_min_similarity=0.3, keywords_per_vote=3, max_keywords_per_conversation=3,
                           category_vote_share=0.0, false_keywords_per_topic=0.4)
    noise = VoteNoise(num_clusters=2, weighted=True, stage=None, delta=1e-6, histogram_noise=None, partitions_per_user=None,
                      noise_seed=None, private=False)
    # No conversation: what the stage lists comes from the centres alone.
    public = PublicKeywords(keywords, categories, EmbeddingKeywordSelector(keywords, encoder), encoder)
    output = LocalEngine().apply("keywords", TopicKeywords(
        params, VoteSample(None, 0), noise, None, public, KeptClusters({0: 10.0, 1: 10.0}, [0, 1]),
        DPKMeansOutput(centres, None, None, centres.shape[1])), [])
    # The first t nearest, less the sensitive ones, as a centre-guessed label's keywords are: the
    # laundering topic's two nearest (cosine 0.75 and 0.40; then python at 0.04) are both sensitive.
    assert output.centroid_keywords == {0: [], 1: ["unit testing", "python"]}
