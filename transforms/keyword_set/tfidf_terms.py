"""KwSet-TFIDF's private per-user steps: clipped term counts, a user's counts, their top TF-IDF terms.

ClippedTermCounts: Facet -> ClippedTerms (the facet's content words, counts clipped to L1 <= L).
UserTermCounts: ClippedTerms -> (user_id, counts summed over the user's conversations).
TopTfidfTerms: (user_id, counts) + the DP document frequencies -> (user_id, term), the user's top L0
  TF-IDF terms, each once, for DP partition selection. Private: never released as is.
"""

from __future__ import annotations

import dataclasses

import apache_beam as beam

from backends.tokenize import content_terms
from core.records import Facet
from dp_ops.tfidf import clip_counts, top_tfidf_terms, user_term_counts
from transforms.stage_timing import timed


@dataclasses.dataclass(frozen=True)
class ClippedTerms:
    conversation_id: str
    user_id: str
    counts: dict[str, int]


def _clipped(facet: Facet, max_terms: int) -> ClippedTerms:
    return ClippedTerms(facet.conversation_id, facet.user_id, clip_counts(content_terms(facet.text), max_terms))


class ClippedTermCounts(beam.PTransform):
    def __init__(self, max_terms_per_conversation: int):
        super().__init__()
        self._max_terms = max_terms_per_conversation

    def expand(self, facets):
        return facets | "tokenize and clip term counts" >> beam.Map(timed("term_counts", _clipped),
                                                                     self._max_terms)


class UserTermCounts(beam.PTransform):
    """Output: (user_id, {term: count}) summed over the user's (at most C) conversations."""

    def expand(self, clipped_terms):
        return (clipped_terms
                | "key by user" >> beam.Map(lambda clipped: (clipped.user_id, clipped.counts))
                | "group by user" >> beam.GroupByKey()
                | "sum a user's counts" >> beam.MapTuple(lambda user, counts: (user, user_term_counts(counts))))


def _top_terms(user_counts: tuple[str, dict[str, int]], frequencies, k: int, min_noisy_frequency: float):
    user_id, counts = user_counts
    for term in top_tfidf_terms(counts, frequencies, k, min_noisy_frequency):
        yield user_id, term


class TopTfidfTerms(beam.PTransform):
    """Output: (user_id, term) for each of a user's top-k TF-IDF terms."""

    def __init__(self, noisy_frequencies, terms_per_user: int, min_noisy_frequency: float = 0.0):
        super().__init__()
        self._min_noisy_frequency = min_noisy_frequency
        self._noisy_frequencies = noisy_frequencies
        self._k = terms_per_user

    def expand(self, user_counts):
        return user_counts | "top-k TF-IDF terms" >> beam.FlatMap(
            timed("top_tfidf_terms", _top_terms), beam.pvalue.AsSingleton(self._noisy_frequencies), self._k,
            self._min_noisy_frequency)
