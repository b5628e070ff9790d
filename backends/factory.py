"""Builds the pluggable steps the job's options ask for (--llm_backend picks offline or an LLM)."""

from __future__ import annotations

from backends.interfaces import ClusterNamer, FacetExtractor, KeywordProposer, KeywordSelector, KeywordSetRefiner
from backends.offline import EmbeddingKeywordSelector, KeywordClusterNamer, UserTurnsFacetExtractor
from backends.offline_keywords import EmbeddingKeywordSetRefiner, FrequentTermsKeywordProposer


def _llm_config(options):
    """The LLM settings, or None for the offline backend (no LLM module is imported then)."""
    if getattr(options, "llm_backend", "offline") in (None, "offline"):
        return None
    from backends.llm.config import config_from_options
    return config_from_options(options)


def make_facet_extractor(options) -> FacetExtractor:
    offline = UserTurnsFacetExtractor(max_chars=options.facet_max_chars)
    config = _llm_config(options)
    if config is None:
        return offline
    from backends.llm.steps import LLMFacetExtractor
    return LLMFacetExtractor(config, fallback=offline)


def make_keyword_selector(options, keywords: tuple[str, ...]) -> KeywordSelector:
    offline = EmbeddingKeywordSelector(keywords, options.embedding_model, options.keyword_min_similarity,
                                       backend=options.embedding_backend)
    config = _llm_config(options)
    if config is None:
        return offline
    from backends.llm.steps import LLMKeywordSelector
    return LLMKeywordSelector(config, keywords, fallback=offline)


def make_cluster_namer(options) -> ClusterNamer:
    config = _llm_config(options)
    if config is None:
        return KeywordClusterNamer()
    from backends.llm.steps import LLMClusterNamer
    return LLMClusterNamer(config, fallback=KeywordClusterNamer())


def make_keyword_proposer(options) -> KeywordProposer:
    """The `llm`/`hybrid` keyword-set methods' proposer."""
    offline = FrequentTermsKeywordProposer()
    config = _llm_config(options)
    if config is None:
        return offline
    from backends.llm.steps import LLMKeywordProposer
    return LLMKeywordProposer(config, fallback=offline)


def make_keyword_set_refiner(options) -> KeywordSetRefiner:
    offline = EmbeddingKeywordSetRefiner(options.embedding_model)
    config = _llm_config(options)
    if config is None:
        return offline
    from backends.llm.steps import LLMKeywordSetRefiner
    return LLMKeywordSetRefiner(config, fallback=offline)
