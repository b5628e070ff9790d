"""Builds the pluggable steps the job's options ask for."""

from __future__ import annotations

from backends.interfaces import ClusterNamer, FacetExtractor, KeywordProposer, KeywordSelector, KeywordSetRefiner
from backends.offline import EmbeddingKeywordSelector, KeywordClusterNamer, UserTurnsFacetExtractor
from backends.offline_keywords import EmbeddingKeywordSetRefiner, FrequentTermsKeywordProposer


def make_facet_extractor(options) -> FacetExtractor:
    return UserTurnsFacetExtractor(max_chars=options.facet_max_chars)


def make_keyword_selector(options, keywords: tuple[str, ...]) -> KeywordSelector:
    return EmbeddingKeywordSelector(keywords, options.embedding_model, options.keyword_min_similarity)


def make_cluster_namer(options) -> ClusterNamer:
    return KeywordClusterNamer()


def make_keyword_proposer(options) -> KeywordProposer:
    """The `llm`/`hybrid` keyword-set methods' proposer (offline; the LLM one is added with backends/llm)."""
    return FrequentTermsKeywordProposer()


def make_keyword_set_refiner(options) -> KeywordSetRefiner:
    return EmbeddingKeywordSetRefiner(options.embedding_model)
