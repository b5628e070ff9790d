"""Offline (model-free or embedding-only) KeywordProposer and KeywordSetRefiner.

The LLM implementations live in backends/llm/; these are the deterministic defaults, so the `llm`
and `hybrid` keyword-set methods run end to end without any API.
"""

from __future__ import annotations

import collections

import numpy as np

from backends import embedding
from backends.interfaces import KeywordProposer, KeywordSetRefiner
from backends.tokenize import content_terms, is_content_term, words
from config.embedding import Encoder

MIN_KEYWORD_CHARS = 3


class FrequentTermsKeywordProposer(KeywordProposer):
    """A facet's most repeated content words; ties go to the longer word (a cheap proxy for a
    specific one), then to the first seen. Stands in for an LLM's 3-5 keywords per conversation."""

    def propose(self, facets: list[str], max_keywords: int) -> list[list[str]]:
        proposals = []
        for facet in facets:
            terms = [t for t in content_terms(facet) if len(t) >= MIN_KEYWORD_CHARS]
            counts = collections.Counter(terms)
            first_seen = {term: i for i, term in reversed(list(enumerate(terms)))}
            ranked = sorted(counts, key=lambda t: (-counts[t], -len(t), first_seen[t]))
            proposals.append(ranked[:max_keywords])
        return proposals


class EmbeddingKeywordSetRefiner(KeywordSetRefiner):
    """One deterministic refinement round over a ranked public list (best first):
    remove keywords with no content word (stopwords, numbers, too short), remove a keyword whose
    embedding is within `duplicate_similarity` (cosine) of a better-ranked kept one ("error" /
    "errors", "python" / "python3"), then cut the tail down to `target_size`. It never appends:
    inventing words needs a model (the LLM refiner does). `encoder`: the run's, which later embeds the set."""

    def __init__(self, encoder: Encoder, duplicate_similarity: float = 0.85):
        self.encoder = encoder
        self.duplicate_similarity = duplicate_similarity

    def refine(self, keywords: list[str], target_size: int) -> tuple[list[str], list[str]]:
        remove = [k for k in keywords if not _has_content(k)]
        candidates = [k for k in keywords if _has_content(k)]
        kept: list[int] = []
        if candidates:
            vectors = embedding.encode(self.encoder, candidates)
            for i in range(len(candidates)):
                if kept and float(np.max(vectors[kept] @ vectors[i])) >= self.duplicate_similarity:
                    remove.append(candidates[i])
                else:
                    kept.append(i)
        remove += [candidates[i] for i in kept[target_size:]]
        return remove, []


def _has_content(keyword: str) -> bool:
    return len(keyword) >= MIN_KEYWORD_CHARS and any(is_content_term(w) for w in words(keyword))


def refine_until_stable(refiner: KeywordSetRefiner, keywords: list[str], target_size: int,
                        max_rounds: int) -> tuple[list[str], int]:
    """URANIA's iterative refinement: apply rounds of (words_to_remove, words_to_append) until a
    round changes nothing or `max_rounds` ran. Returns (keywords, rounds run). Order is kept
    (appended words go last), so a ranked list stays ranked."""
    current = list(dict.fromkeys(keywords))
    for round_number in range(1, max_rounds + 1):
        remove, append = refiner.refine(current, target_size)
        removed = set(remove) & set(current)
        appended = [w for w in dict.fromkeys(" ".join(a.lower().split()) for a in append) if w and w not in current]
        if not removed and not appended:
            return current, round_number
        current = [k for k in current if k not in removed] + appended
    return current, max_rounds
