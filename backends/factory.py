"""Builds the pluggable steps the job's options ask for."""

from __future__ import annotations

from backends.interfaces import ClusterNamer, FacetExtractor, KeywordSelector
from backends.offline import EmbeddingKeywordSelector, KeywordClusterNamer, UserTurnsFacetExtractor


def make_facet_extractor(options) -> FacetExtractor:
    return UserTurnsFacetExtractor(max_chars=options.facet_max_chars)


def make_keyword_selector(options, keywords: tuple[str, ...]) -> KeywordSelector:
    return EmbeddingKeywordSelector(keywords, options.embedding_model, options.keyword_min_similarity,
                                    backend=options.embedding_backend)


def make_cluster_namer(options) -> ClusterNamer:
    return KeywordClusterNamer()
