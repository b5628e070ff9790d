"""Builds the pluggable steps a job asks for: the offline ones, or with the run's resolved LLMParams
(LLMParams.resolved: --llm_backend other than offline) the LLM ones for the steps it names
(--llm_steps). The steps on public or DP-released text (names, exemplars, keyword-set refinement) get
the offline ones as their per-call fallbacks; the steps on records' text (facets, keyword selection,
keyword proposals) get none: a record whose call fails is dead-lettered, or proposes nothing
(backends/llm/steps.py). Those put conversation text into their prompts, so they get the PII guard of
backends/pii/ too (`pseudonymizer_for`): this is where the LLM steps and the guard meet, as backends/llm/
imports nothing of backends/pii/."""

from __future__ import annotations

from backends import interfaces
from backends.centre_decoder import TemplateLabelWriter
from backends.keyword_categories import KeywordCategories
from backends.llm import config as llm_config
from backends.offline import EmbeddingKeywordSelector, KeywordClusterNamer, UserTurnsFacetExtractor
from backends.offline_exemplars import TemplateExemplarWriter
from backends.offline_keywords import EmbeddingKeywordSetRefiner, FrequentTermsKeywordProposer
from config.embedding import Encoder
from config.llm import LLMParams


def pseudonymizer_for(llm: LLMParams):
    """The run's pseudonymizer, which a step putting conversation text into its prompts builds on its
    worker (backends.llm.steps.PseudonymizerFactory): one per process, kind of pseudonym and person judge."""
    from backends.pii.pseudonymize import shared_pseudonymizer
    return shared_pseudonymizer(llm.pseudonyms, llm_config.person_judge_spec(llm))


def preflight(llm: LLMParams) -> None:
    """The job's one preflight step for its model-shaped steps, run once at launch before any data is read
    (beam_jobs.insights.run, beam_jobs.build_keywords.run): the pseudonymizer's name model when the run
    pseudonymizes, then the LLM backend's (backends.llm.config.preflight: what its flags need of this machine, the
    local model server, the remote backends' one fixed call). It raises ValueError, a bad option (exit 2)."""
    if llm.pseudonymizes:
        # the pseudonymizer's name model is a weights package (requirements-models.txt): without it
        # fewer names would be replaced, so the job stops at launch rather than on its first worker
        from backends.pii.name_model import NameModelMissing, model_directory
        try:
            model_directory()
        except NameModelMissing as error:
            raise ValueError(f"--pseudonymize: {error}") from None
    llm_config.preflight(llm)


def make_facet_extractor(max_chars: int, llm: LLMParams | None) -> interfaces.FacetExtractor:
    if llm is None or not llm.uses("facets"):
        return UserTurnsFacetExtractor(max_chars=max_chars)
    from backends.llm.steps import LLMFacetExtractor
    return LLMFacetExtractor(llm, pseudonymizer_for)


def make_keyword_selector(keywords: tuple[str, ...], encoder: Encoder, min_similarity: float,
                          llm: LLMParams | None) -> interfaces.KeywordSelector:
    """`encoder`: the run's, which embeds K (and the LLM's own words) in the conversations' space."""
    if llm is None or not llm.uses("keywords"):
        return EmbeddingKeywordSelector(keywords, encoder, min_similarity)
    from backends.llm.steps import LLMKeywordSelector
    return LLMKeywordSelector(llm, keywords, encoder=encoder, pseudonymizer=pseudonymizer_for)


def make_cluster_namer(llm: LLMParams | None, categories: KeywordCategories | None = None) -> interfaces.ClusterNamer:
    """`categories`: the keyword set's (KeywordCategories.of_keyword_set), which the offline namer
    names topics by; without them it names a topic by its top keywords."""
    offline = KeywordClusterNamer(categories)
    if llm is None or not llm.uses("names"):
        return offline
    from backends.llm.steps import LLMClusterNamer
    return LLMClusterNamer(llm, fallback=offline)


def make_exemplar_writer(llm: LLMParams | None) -> interfaces.ExemplarWriter:
    offline = TemplateExemplarWriter()
    if llm is None or not llm.uses("exemplars"):
        return offline
    from backends.llm.steps import LLMExemplarWriter
    return LLMExemplarWriter(llm, fallback=offline)


def make_label_writer(llm: LLMParams | None) -> interfaces.ExemplarWriter:
    """The centre decoder's candidate names (--centre_decoder): on the model when it names topics
    (--llm_steps names), else from templates; the templates are the model's per-call fallback."""
    offline = TemplateLabelWriter()
    if llm is None or not llm.uses("names"):
        return offline
    from backends.llm.steps import LLMLabelWriter
    return LLMLabelWriter(llm, fallback=offline)


def make_keyword_proposer(llm: LLMParams | None) -> interfaces.KeywordProposer:
    """The `llm`/`hybrid` keyword-set methods' proposer."""
    if llm is None:
        return FrequentTermsKeywordProposer()
    from backends.llm.steps import LLMKeywordProposer
    return LLMKeywordProposer(llm, pseudonymizer_for)


def make_keyword_set_refiner(encoder: Encoder, llm: LLMParams | None) -> interfaces.KeywordSetRefiner:
    offline = EmbeddingKeywordSetRefiner(encoder)
    if llm is None:
        return offline
    from backends.llm.steps import LLMKeywordSetRefiner
    return LLMKeywordSetRefiner(llm, fallback=offline)
