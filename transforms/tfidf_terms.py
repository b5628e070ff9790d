"""KwSet-TFIDF's per-conversation steps: clipped term counts, then each conversation's top-k terms.

ClippedTermCounts: Facet -> ClippedTerms (the facet's content words, counts clipped to L1 <= L).
TopTfidfTerms: ClippedTerms + the DP document frequencies -> (user_id, term), k distinct terms per
  conversation, for DP partition selection. Private: never released as is.
"""

from __future__ import annotations

import dataclasses

import apache_beam as beam

from backends.tokenize import content_terms
from core.records import Facet
from dp_ops.tfidf import clip_counts, top_tfidf_terms
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


def _top_terms(clipped: ClippedTerms, frequencies, k: int, min_noisy_frequency: float):
    for term in top_tfidf_terms(clipped.counts, frequencies, k, min_noisy_frequency):
        yield clipped.user_id, term


class TopTfidfTerms(beam.PTransform):
    """Output: (user_id, term) for each of a conversation's top-k TF-IDF terms."""

    def __init__(self, noisy_frequencies, terms_per_conversation: int, min_noisy_frequency: float = 0.0):
        super().__init__()
        self._min_noisy_frequency = min_noisy_frequency
        self._noisy_frequencies = noisy_frequencies
        self._k = terms_per_conversation

    def expand(self, clipped_terms):
        return clipped_terms | "top-k TF-IDF terms" >> beam.FlatMap(
            timed("top_tfidf_terms", _top_terms), beam.pvalue.AsSingleton(self._noisy_frequencies), self._k,
            self._min_noisy_frequency)
