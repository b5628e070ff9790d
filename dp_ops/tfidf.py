"""KwSet-TFIDF's private statistics: L1-clipped term counts, DP document frequencies, TF-IDF top-k.

Each conversation's term counts are clipped to L1 norm <= L (`clip_counts`), which also bounds its
distinct terms by L. Document frequencies are counted per hash bucket of a term (a public,
data-independent domain of `buckets` ids, so no term list is needed before the release), and the
document count rides along as one more coordinate. One conversation adds 1 to at most L buckets and 1
to the count; one user keeps at most C conversations: the released vector has L1 sensitivity
C * (L + 1) and gets discrete Laplace noise of scale C * (L + 1) / epsilon.

Everything after the release (IDF, each conversation's top-k terms) is a function of the noisy
vector and of one conversation, so a user's data reaches other users' top-k terms only through the
DP release; that is what lets the partition selection that follows count each user C * k times.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import math

import numpy as np

from core.spend import MechanismSpend
from dp_ops import discrete_laplace

STAGE = "keyword_set"


@dataclasses.dataclass(frozen=True)
class DocumentFrequencyParams:
    epsilon: float
    max_conversations_per_user: int
    max_terms_per_conversation: int = 16
    buckets: int = 1 << 16

    def __post_init__(self):
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"document-frequency epsilon must be > 0 and finite, got {self.epsilon}")
        if self.max_conversations_per_user < 1 or self.max_terms_per_conversation < 1:
            raise ValueError("max_conversations_per_user and max_terms_per_conversation must be >= 1")
        if self.buckets < 1:
            raise ValueError(f"buckets must be >= 1, got {self.buckets}")

    @property
    def sensitivity(self) -> int:
        return self.max_conversations_per_user * (self.max_terms_per_conversation + 1)

    @property
    def scale(self) -> float:
        return discrete_laplace.scale_for(self.epsilon, self.sensitivity)

    def default_min_noisy_frequency(self) -> float:
        """One noise standard deviation: a term in no document clears it with probability ~12%, one in
        enough documents to pass partition selection almost always does."""
        return math.sqrt(discrete_laplace.variance(self.scale))

    def spend(self) -> MechanismSpend:
        return discrete_laplace.spend(STAGE, f"discrete Laplace document frequencies ({self.buckets} hash "
                                             f"buckets) and document count", self.scale, self.sensitivity)


def clip_counts(terms: list[str], max_total: int) -> dict[str, int]:
    """Term counts with L1 norm <= max_total: the most frequent terms first (ties: first seen),
    the last one kept cut down to what is left."""
    counts = collections.Counter(terms)
    first_seen = {term: i for i, term in reversed(list(enumerate(terms)))}
    clipped: dict[str, int] = {}
    left = max_total
    for term in sorted(counts, key=lambda t: (-counts[t], first_seen[t])):
        if left <= 0:
            break
        clipped[term] = min(counts[term], left)
        left -= clipped[term]
    return clipped


def bucket_of(term: str, buckets: int) -> int:
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % buckets


def document_vector_indices(counts: dict[str, int], buckets: int) -> np.ndarray:
    """Coordinates one conversation adds 1 to: its terms' distinct buckets, and the count slot."""
    return np.array(sorted({bucket_of(t, buckets) for t in counts}) + [buckets], dtype=np.int64)


@dataclasses.dataclass(frozen=True)
class NoisyDocumentFrequencies:
    """The DP release: noisy documents per term bucket, and the noisy document count."""

    frequencies: np.ndarray
    documents: int

    @classmethod
    def from_noisy_vector(cls, vector: np.ndarray) -> "NoisyDocumentFrequencies":
        return cls(np.asarray(vector[:-1], dtype=np.int64), int(vector[-1]))

    def frequency(self, term: str) -> int:
        return int(self.frequencies[bucket_of(term, len(self.frequencies))])

    def idf(self, term: str) -> float:
        """Smoothed IDF; noisy values below 0 (documents) or 1 (count) are clamped."""
        df = max(0, self.frequency(term))
        return math.log((1 + max(1, self.documents)) / (1 + df)) + 1.0


def top_tfidf_terms(counts: dict[str, int], frequencies: NoisyDocumentFrequencies, k: int,
                    min_noisy_frequency: float = 0.0) -> list[str]:
    """The k terms with the largest count x IDF (ties: alphabetical), among terms whose noisy
    document frequency is at least `min_noisy_frequency`: the rarest terms (a ticket number, a
    name) top any TF-IDF ranking yet can never pass partition selection, so they would only waste
    the conversation's k slots (sklearn's min_df, applied to the DP release)."""
    scored = sorted((-count * frequencies.idf(term), term) for term, count in counts.items()
                    if frequencies.frequency(term) >= min_noisy_frequency)
    return [term for _, term in scored[:k]]
