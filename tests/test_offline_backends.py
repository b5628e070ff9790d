import numpy as np
import pytest

from backends.embedding import embed_texts
from backends.keyword_set import DEFAULT_KEYWORD_SET, load_keyword_set
from backends.offline import EmbeddingKeywordSelector, KeywordClusterNamer, UserTurnsFacetExtractor
from core.records import Conversation, Message


def test_facet_is_the_user_turns_only_truncated():
    conversation = Conversation("c", "u", None, (Message("system", "SYSTEM PROMPT"), Message("user", "first question"),
                                                 Message("assistant", "ASSISTANT REPLY"), Message("user", "second")))
    assert UserTurnsFacetExtractor().extract(conversation) == "first question\nsecond"
    assert UserTurnsFacetExtractor(max_chars=5).extract(conversation) == "first"


@pytest.mark.parametrize("keywords", [["python"], ["python", "debugging"], ["a b c d", "e f g h", "i j k l", "m"],
                                      ["one two three four five six seven eight nine ten eleven twelve"]])
def test_names_have_at_most_ten_words_and_use_only_the_keywords(keywords):
    name, description = KeywordClusterNamer().name(keywords)
    assert 1 <= len(name.split()) <= 10
    allowed = {w for k in keywords for w in k.split()} | {"and"}
    assert {w.strip(",").lower() for w in name.split()} <= allowed
    assert description.count(". ") + description.endswith(".") == 2


def test_topic_without_keywords_gets_a_neutral_name():
    name, description = KeywordClusterNamer().name([])
    assert name == "Unlabelled topic" and description


def test_default_keyword_set_is_a_few_hundred_distinct_public_keywords():
    keyword_set = load_keyword_set()
    assert keyword_set.source == DEFAULT_KEYWORD_SET
    assert 300 <= len(keyword_set.keywords) == len(set(keyword_set.keywords))
    assert {"python", "recipes", "travel planning", "tenant rights", "video games"} <= set(keyword_set.keywords)


def test_json_keyword_set_carries_its_privacy_spend(tmp_path):
    path = tmp_path / "k.json"
    path.write_text('{"keywords": ["Python", "python ", "SQL"], "method": "tfidf", "privacy": {"mechanisms": ['
                    '{"stage": "keyword_set", "mechanism": "m", "epsilon": 1.0, "delta": 1e-7, '
                    '"sensitivity": 5, "noise": {}}]}}')
    keyword_set = load_keyword_set(str(path))
    assert keyword_set.keywords == ("python", "sql")
    assert keyword_set.method == "tfidf" and keyword_set.spend[0].epsilon == 1.0


@pytest.mark.parametrize("content,match", [("# only a comment\n", "empty"), ("x" * 100 + "\n", "longer")])
def test_bad_keyword_sets_are_rejected(tmp_path, content, match):
    path = tmp_path / "k.txt"
    path.write_text(content)
    with pytest.raises(ValueError, match=match):
        load_keyword_set(str(path))


def test_missing_keyword_set_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="cannot read keyword set"):
        load_keyword_set(str(tmp_path / "nope.txt"))


@pytest.mark.slow
def test_real_model_embeddings_are_unit_norm_and_topical():
    vectors = embed_texts("all-MiniLM-L6-v2", ["How do I fix a KeyError in my Python script?",
                                               "Best pasta recipe for dinner", "Python exception traceback help"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert vectors[0] @ vectors[2] > vectors[0] @ vectors[1]


@pytest.mark.slow
def test_embedding_selector_picks_the_nearest_keywords_above_the_floor():
    keywords = ("python", "cooking", "gardening", "taxes")
    selector = EmbeddingKeywordSelector(keywords, "all-MiniLM-L6-v2", min_similarity=0.3)
    texts = ["My Python script raises a TypeError", "What should I cook for dinner tonight?", "zzzz qqqq"]
    picks = selector.select(texts, embed_texts("all-MiniLM-L6-v2", texts), max_keywords=2)
    assert picks[0][0] == "python" and picks[1][0] == "cooking" and picks[2] == []
