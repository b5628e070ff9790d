"""eval/utility/label_coverage.py's vote ceiling: the exact whole-set votes obey the job's user-level bound."""

import math

import pytest

from core.records import Conversation, Message
from eval.data import Dataset, TextEmbedder
from eval.urania_inprocess import UraniaConfig
from eval.utility.label_coverage import whole_set_votes


@pytest.mark.slow
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
