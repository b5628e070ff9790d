import pickle

import numpy as np
import pytest

from backends.embedding import embed_texts
from backends.keyword_categories import KeywordCategories, dominant_category, nearest_bundled_categories
from backends.keyword_set import DEFAULT_KEYWORD_SET, load_keyword_set
from backends.offline import EmbeddingKeywordSelector, KeywordClusterNamer, UserTurnsFacetExtractor
from config.embedding import Encoder
from core.records import Conversation, Message


def test_facet_is_the_user_turns_only_truncated():
    conversation = Conversation("c", "u", None, (Message("system", "SYSTEM PROMPT"), Message("user", "first question"),
                                                 Message("assistant", "ASSISTANT REPLY"), Message("user", "second")))
    assert UserTurnsFacetExtractor().extract(conversation) == "first question\nsecond"
    assert UserTurnsFacetExtractor(max_chars=5).extract(conversation) == "first"


CATEGORY_OF = {"python": "Python coding", "unit testing": "Python coding", "error message": "Python coding",
               "debugging": "Python coding", "python coding": "Python coding", "sql": "Databases",
               "postgresql": "Databases", "vegetables": "Food and cooking", "recipes": "Food and cooking",
               "a b c d": "A very long category name with many words in it", "e f g h": "Other",
               "i j k l": "Other", "m": "Other"}
CATEGORISED = KeywordClusterNamer(KeywordCategories(CATEGORY_OF))


def _allowed_words(keywords, namer):
    categories = namer.categories.category_of.values() if namer.categories else []
    return {w for text in [*keywords, *(c for c in categories if c)] for w in text.lower().split()} | {"and"}


@pytest.mark.parametrize("namer", [KeywordClusterNamer(), CATEGORISED], ids=["no categories", "categories"])
@pytest.mark.parametrize("keywords", [["python"], ["python", "debugging"], ["a b c d", "e f g h", "i j k l", "m"],
                                      ["one two three four five six seven eight nine ten eleven twelve"],
                                      ["sql", "vegetables", "postgresql"]])
def test_names_have_at_most_ten_words_and_use_only_the_keywords_and_categories(keywords, namer):
    name, description = namer.name(keywords)
    assert 1 <= len(name.split()) <= 10
    assert {w.strip(",:").lower() for w in name.split()} <= _allowed_words(keywords, namer)
    assert description.count(". ") + description.endswith(".") == 2


def test_a_name_is_the_dominant_category_and_its_top_keywords():
    name, description = CATEGORISED.name(["python", "unit testing", "error message", "debugging"])
    assert name == "Python coding: python and unit testing"
    assert description.startswith("Requests about python coding, most often python and unit testing, "
                                  "also error message and debugging. All of its keywords are in this category;")


def test_a_name_never_joins_two_categories_and_the_others_stay_in_the_description():
    name, description = CATEGORISED.name(["sql", "postgresql", "vegetables"])
    assert name == "Databases: sql and postgresql"
    assert "vegetables" not in name.lower() and "some also mention vegetables" in description
    assert "2 of its 3 keywords are in this category" in description


def test_the_dominant_category_weighs_keywords_by_rank():
    # Food's one keyword ranks first (weight 1) against Databases' two after it (1/2 + 1/3).
    assert CATEGORISED.name(["vegetables", "sql", "postgresql"])[0] == "Food and cooking: vegetables"
    assert CATEGORISED.name(["sql", "vegetables", "recipes"])[0] == "Databases: sql"
    assert dominant_category(["x", "y"], CATEGORY_OF) is None


def test_a_keyword_equal_to_its_category_is_not_repeated_in_the_name():
    assert CATEGORISED.name(["python coding", "debugging"])[0] == "Python coding: debugging"


def test_without_categories_a_name_is_the_top_two_keywords():
    name, description = KeywordClusterNamer().name(["python", "unit testing", "error message"])
    assert name == "Python and unit testing"
    assert "no category" in description and "error message" in description


def test_topic_without_keywords_gets_a_neutral_name():
    for namer in (KeywordClusterNamer(), CATEGORISED):
        name, description = namer.name([])
        assert name == "Unlabelled topic" and description


def test_keywords_without_a_category_take_the_nearest_bundled_keywords_category():
    bundled = load_keyword_set().category_of()
    # A stand-in embedding: "postgres" sits on "postgresql"'s axis, "zzz" on an axis of its own.
    axis = {"postgresql": 0, "postgres": 0, "zzz": 1}

    def embed(texts):
        vectors = np.zeros((len(texts), 3))
        for row, text in enumerate(texts):
            vectors[row, axis.get(text, 2)] = 1.0
        return vectors

    found = nearest_bundled_categories(["python", "postgres", "zzz"], embed, 0.45)
    assert found == {"python": bundled["python"], "postgres": bundled["postgresql"], "zzz": None}


def test_keyword_categories_fill_in_only_the_missing_ones_and_ship_without_them(monkeypatch):
    from backends import embedding
    monkeypatch.setattr(embedding, "embed_texts", lambda model, texts, backend="torch", device="cpu": np.eye(len(texts)))
    categories = KeywordCategories({"python": "Mine", "unknown words": None}, Encoder("any"))
    assert categories.category_of == {"python": "Mine", "unknown words": None}  # nothing near it
    assert pickle.loads(pickle.dumps(categories))._resolved is None
    assert KeywordCategories({"python": None}).category_of == {"python": None}  # no encoder: left as it is


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


@pytest.mark.real_model
def test_real_model_embeddings_are_unit_norm_and_topical():
    vectors = embed_texts("all-MiniLM-L6-v2", ["How do I fix a KeyError in my Python script?",
                                               "Best pasta recipe for dinner", "Python exception traceback help"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert vectors[0] @ vectors[2] > vectors[0] @ vectors[1]


@pytest.mark.real_model
def test_embedding_selector_picks_the_nearest_keywords_above_the_floor():
    keywords = ("python", "cooking", "gardening", "taxes")
    selector = EmbeddingKeywordSelector(keywords, Encoder("all-MiniLM-L6-v2"), min_similarity=0.3)
    texts = ["My Python script raises a TypeError", "What should I cook for dinner tonight?", "zzzz qqqq"]
    picks = selector.select(texts, embed_texts("all-MiniLM-L6-v2", texts), max_keywords=2)
    assert picks[0][0] == "python" and picks[1][0] == "cooking" and picks[2] == []
