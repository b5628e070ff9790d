"""The bundled public keyword set: size, categories, label-worthy phrases, no duplicates."""

import collections
import re

import numpy as np
import pytest

from backends.keyword_set import DEFAULT_KEYWORD_SET, MAX_KEYWORD_CHARS, load_keyword_set
from synthetic.topics import PLANTED_TOPICS

MAX_WORDS = 4
DUPLICATE_SIMILARITY = 0.85  # backends.offline_keywords.EmbeddingKeywordSetRefiner's default
# Company names a keyword must not carry (the set names topics, not private entities).
COMPANY_WORDS = {"google", "microsoft", "amazon", "apple", "meta", "facebook", "openai", "chatgpt", "tiktok",
                 "youtube", "netflix", "linkedin", "airbnb", "uber", "tesla", "twitter", "instagram", "iphone"}


def _raw_entries() -> list[tuple[str, str | None]]:
    """(keyword as written, category) for every keyword line, before the loader drops repeats."""
    entries, category = [], None
    for line in open(DEFAULT_KEYWORD_SET, encoding="utf-8"):
        stripped = line.strip()
        if stripped.startswith("##"):
            category = stripped.lstrip("#").strip()
            continue
        keyword = stripped.split("#", 1)[0].strip()
        if keyword:
            entries.append((keyword, category))
    return entries


def _normalised(keyword: str) -> str:
    """Case, spacing, punctuation and a plural 's' removed: 'Unit-Tests' and 'unit test' collide."""
    words = re.sub(r"[^\w+#]+", " ", keyword.lower()).split()
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words)


def test_size_and_categories():
    bundled = load_keyword_set()
    sizes = collections.Counter(bundled.categories)
    assert 1200 <= len(bundled.keywords) <= 1800
    assert None not in sizes, "every keyword has a category"
    assert 25 <= len(sizes) <= 40
    assert min(sizes.values()) >= 15 and max(sizes.values()) <= 100, sizes
    # A category name heads a topic name ("<Category>: ..."): short, capitalised, no trailing punctuation.
    for category in sizes:
        assert category[0].isupper() and len(category.split()) <= 5 and category[-1].isalnum(), category


def test_the_header_states_the_sets_size():
    header = re.search(r"(\d+) keywords in (\d+) categories", open(DEFAULT_KEYWORD_SET, encoding="utf-8").read(600))
    bundled = load_keyword_set()
    assert header and (int(header[1]), int(header[2])) == (len(bundled.keywords), len(set(bundled.categories)))


def test_no_exact_or_normalised_duplicates():
    raw = [keyword for keyword, _ in _raw_entries()]
    assert [k for k, n in collections.Counter(raw).items() if n > 1] == []
    by_form = collections.defaultdict(list)
    for keyword in raw:
        by_form[_normalised(keyword)].append(keyword)
    assert [group for group in by_form.values() if len(group) > 1] == []


def test_keywords_are_short_lowercase_phrases_without_company_names():
    for keyword, _ in _raw_entries():
        assert keyword == keyword.lower() and keyword == " ".join(keyword.split()), keyword
        assert len(keyword) <= MAX_KEYWORD_CHARS and len(keyword.split()) <= MAX_WORDS, keyword
        assert not set(re.findall(r"\w+", keyword)) & COMPANY_WORDS, keyword


def test_planted_topics_expected_keywords_are_in_and_categorised():
    category_of = load_keyword_set().category_of()
    for topic in PLANTED_TOPICS:
        for keyword in topic.expected_keywords:
            assert category_of.get(keyword), (topic.name, keyword)


def test_the_normalisation_catches_what_it_should():
    assert _normalised("Unit-Tests") == _normalised("unit test")
    assert _normalised("dogs") == _normalised("dog") and _normalised("class") != _normalised("clas")


@pytest.mark.real_model
def test_no_two_keywords_embed_as_near_duplicates():
    from backends.embedding import embed_texts
    keywords = list(load_keyword_set().keywords)
    vectors = embed_texts("all-MiniLM-L6-v2", keywords)  # the file's rule is stated in MiniLM's cosine
    similarities = np.triu(vectors @ vectors.T, k=1)
    pairs = [(keywords[i], keywords[j], round(float(similarities[i, j]), 3))
             for i, j in zip(*np.nonzero(similarities >= DUPLICATE_SIMILARITY))]
    assert pairs == []
