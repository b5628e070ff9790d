"""eval/utility/label_coverage.py: the vote ceiling's exact whole-set votes obey the job's user-level bound; the
audit of released names against each topic's exact category votes; the run's own encoder embeds the data."""

import math

import pytest

from core.records import Conversation, Message
from eval.data import Dataset, TextEmbedder
from eval.urania_inprocess import UraniaConfig
from eval.utility import label_coverage
from eval.utility.label_coverage import name_audit, topic_category_votes, whole_set_votes


@pytest.mark.real_model
def test_whole_set_votes_count_each_user_once_however_many_conversations():
    texts = ["How do I write SQL joins across three tables?"] * 12 + ["Explain SQL joins with an example query."]
    users = ["heavy"] * 12 + ["light"]
    conversations = [Conversation(f"c{i}", user, None, (Message("user", text),))
                     for i, (user, text) in enumerate(zip(users, texts))]
    dataset = Dataset(conversations, texts)
    config = UraniaConfig(num_clusters=1, embedding_model="all-MiniLM-L6-v2")  # the keywords below are its nearest
    totals = whole_set_votes(dataset, TextEmbedder(config.embedding_model)(texts), config)
    # Each user's vote vector has L2 norm <= 1 (conversation weights 1/n_u, the keywords' part sqrt(1 - s)
    # of it split evenly over its keywords_per_vote keywords, s the category share): both users vote
    # "sql joins" and "sql", and the heavy user's 12 conversations count as one user, not twelve.
    per_keyword = math.sqrt(1 - config.category_vote_share) / math.sqrt(config.keywords_per_vote)
    assert totals == pytest.approx({"sql joins": 2 * per_keyword, "sql": 2 * per_keyword})


def _topic(topic_id, source, category=None, sensitive_share=None):
    topic = {"id": topic_id, "label_source": source, "name": "-"}
    if category:
        topic["voted_category"] = category
    if sensitive_share:
        topic["sensitive_share"] = sensitive_share
    return topic


def test_name_audit_counts_thin_names_thin_sensitive_names_and_withheld_majorities():
    sensitive = frozenset({"Crime and fraud"})
    votes = {0: {"Cooking": 1.0, "Travel": 9.0},          # named Cooking: 10% of its votes, a thin name
             1: {"Cooking": 8.0, "Travel": 2.0},          # named Cooking: 80%
             2: {"Crime and fraud": 4.0, "Travel": 6.0},  # named by a sensitive category holding 40%
             3: {"Crime and fraud": 7.0, "Travel": 3.0},  # crime withheld though it held 70%
             4: {"Crime and fraud": 3.0, "Travel": 7.0},  # crime withheld, rightly (30%)
             5: {"Cooking": 0.5, "Travel": 9.5}}          # thin, but a centre guess: not named by votes
    withheld = {"category": "Crime and fraud", "share": 0.6, "low": 0.3, "high": 0.8}
    topics = [_topic(0, "dp_category_votes", "Cooking"), _topic(1, "dp_keyword_histogram", "Cooking"),
              _topic(2, "dp_category_votes", "Crime and fraud",
                     {"category": "Crime and fraud", "share": 0.7, "low": 0.55, "high": 0.9}),
              _topic(3, "nearest_keywords_to_dp_centre", None, withheld),
              _topic(4, "dp_category_votes", "Travel", withheld),
              _topic(5, "nearest_keywords_to_dp_centre", "Cooking")]
    assert name_audit(topics, votes, sensitive) == {"thin": 1, "sensitive_under_half": 1, "withheld_majority": 1}


def test_the_coverage_run_embeds_the_data_with_the_encoder_it_is_given(monkeypatch):
    texts = ["How do I bake bread?", "Plan a trip to Kyoto."]
    conversations = [Conversation(f"c{i}", f"u{i}", None, (Message("user", text),)) for i, text in enumerate(texts)]
    monkeypatch.setattr(label_coverage, "load_dataset", lambda path: Dataset(conversations, texts))
    models = []

    class Embedded(Exception):
        pass

    def embed_cached(facets, model=None):
        models.append(model)
        raise Embedded  # the encoder is all this test checks: stop before any model loads

    monkeypatch.setattr(label_coverage, "embed_cached", embed_cached)
    with pytest.raises(Embedded):
        label_coverage.main(["--data", "x=any.jsonl:2", "--set", "embedding_model=all-MiniLM-L6-v2"])
    # Every public text of the run (keywords, categories) is embedded with the run's encoder, so the
    # conversations must be too: the default encoder's vectors would lie in another space.
    assert models == ["all-MiniLM-L6-v2"]


@pytest.mark.real_model
def test_topic_category_votes_sum_each_topics_kept_members_with_each_user_bounded():
    texts = ["How do I write SQL joins across three tables?"] * 6 + ["Explain SQL joins with an example query.",
                                                                     "Write a SQL query that joins two tables."]
    users = ["heavy"] * 6 + ["light", "other"]
    conversations = [Conversation(f"c{i}", user, None, (Message("user", text),))
                     for i, (user, text) in enumerate(zip(users, texts))]
    dataset = Dataset(conversations, texts)
    config = UraniaConfig(num_clusters=2, embedding_model="all-MiniLM-L6-v2")
    # The heavy user's conversations in topic 0, the light user's in topic 1, nothing assigned for "other".
    report = {"_private": {"assignments": {f"c{i}": 0 for i in range(6)} | {"c6": 1}}}
    votes = topic_category_votes(report, dataset, TextEmbedder(config.embedding_model)(texts), config, seed=0)
    assert set(votes) == {0, 1}
    # Each user's category votes have L2 norm sqrt(s) (the same category for every one of a user's
    # identical conversations, whose weights sum to 1): 12 conversations do not make a heavier vote.
    for topic in (0, 1):
        assert math.sqrt(sum(v * v for v in votes[topic].values())) == pytest.approx(
            math.sqrt(config.category_vote_share))
