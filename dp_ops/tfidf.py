"""KwSet-TFIDF's private statistics: user-level term counts, DP document frequencies, TF-IDF top terms.

Units are users, not conversations. A conversation's term counts are clipped to L1 norm <= L
(`clip_counts`); a user's counts are the sum over their (at most C) conversations.

Document frequencies count users: each user adds 1 to the hash buckets of its `terms_per_user`
most frequent terms (`document_terms`, at most L_df distinct buckets, each at most once: Linf = 1)
and 1 to the user count, one more coordinate. Buckets are a public, data-independent domain, so no
term list is needed before the release. Adding or removing a user changes at most L_df + 1
coordinates by 1 each: the vector's L2 sensitivity is sqrt(L_df + 1) (about 4.1 at L_df = 16),
against C * sqrt(L + 1) (20.6 at C = 5, L = 16) for conversation-level frequencies and an L1 of
C * (L + 1) = 85 for the former discrete Laplace release. It gets Gaussian noise of sigma =
z * sqrt(L_df + 1) from PyDP's secure sampler (through PipelineDP, as every Gaussian of the
project), dp-accounting's `GaussianDpEvent(z)`.

z is calibrated jointly with the partition selection that follows (`calibrated_document_frequencies`):
the selection keeps its own (epsilon_s, delta_s) and z is the smallest multiplier whose PLD
composition with the selection's (epsilon_s, delta_s) event is (epsilon, delta). The file records
both events; its total is their composition, not the sum of the two epsilons.

Everything after the release (IDF, each user's top TF-IDF terms) is a function of the noisy vector
and of one user's own data, so a user's data reaches other users' terms only through the DP release;
each user then nominates at most L0 terms, once each, for partition selection.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import math
from collections.abc import Iterable

import dp_accounting
import numpy as np
import pipeline_dp

from core.dp_stages import KEYWORD_SET
from core.spend import MechanismSpend
from dp_ops.dp_events import EpsilonDeltaDpEvent, event_to_json
from dp_ops.gaussian_accounting import calibrate_gaussian_noise_multiplier, epsilon_of_gaussian_releases

STAGE = KEYWORD_SET
# The partition selection's share of the set's delta; the Gaussian frequencies need the rest (the
# selection's delta is a probability of unbounded loss, so the composition needs more than it).
SELECTION_DELTA_SHARE = 0.5


@dataclasses.dataclass(frozen=True)
class DocumentFrequencyParams:
    """Gaussian noise of sigma = `noise_multiplier` * sqrt(`terms_per_user` + 1) on user-level
    document frequencies over `buckets` hash buckets; `delta` is where its own epsilon is stated."""

    noise_multiplier: float
    delta: float
    terms_per_user: int = 16
    buckets: int = 1 << 16

    def __post_init__(self):
        if not (self.noise_multiplier > 0 and math.isfinite(self.noise_multiplier)):
            raise ValueError(f"document-frequency noise multiplier must be > 0 and finite, got {self.noise_multiplier}")
        if not 0 < self.delta < 1:
            raise ValueError(f"document-frequency delta must be in (0, 1), got {self.delta}")
        if self.terms_per_user < 1:
            raise ValueError(f"terms_per_user must be >= 1, got {self.terms_per_user}")
        if self.buckets < 1:
            raise ValueError(f"buckets must be >= 1, got {self.buckets}")

    @property
    def sensitivity(self) -> float:
        """L2: a user adds 1 to at most terms_per_user buckets and to the user count."""
        return math.sqrt(self.terms_per_user + 1)

    @property
    def sigma(self) -> float:
        return self.noise_multiplier * self.sensitivity

    def default_min_noisy_frequency(self) -> float:
        """Two noise standard deviations: a term no user has clears it with probability 2.3%, so the
        tens of thousands of one-off terms (names, codes) rarely take a user's slots."""
        return 2 * self.sigma

    def event(self) -> dp_accounting.DpEvent:
        return dp_accounting.GaussianDpEvent(self.noise_multiplier)

    def spend(self) -> MechanismSpend:
        return MechanismSpend(
            stage=STAGE, mechanism=f"Gaussian user-level document frequencies ({self.buckets} hash buckets) "
                                  f"and user count",
            epsilon=epsilon_of_gaussian_releases(self.noise_multiplier, 1, self.delta), delta=self.delta,
            sensitivity=self.sensitivity,
            noise={"kind": "gaussian", "sigma": self.sigma, "std": self.sigma, "terms_per_user": self.terms_per_user},
            event=event_to_json(self.event()))


def calibrated_document_frequencies(epsilon: float, delta: float, selection_epsilon: float,
                                    selection_delta: float, terms_per_user: int,
                                    buckets: int) -> DocumentFrequencyParams:
    """The frequencies' noise such that they and an (selection_epsilon, selection_delta) partition
    selection compose (PLD) to (epsilon, delta)."""
    if not 0 < selection_epsilon < epsilon:
        raise ValueError(f"the selection's epsilon must be in (0, {epsilon}), got {selection_epsilon}")
    if not 0 < selection_delta < delta:
        raise ValueError(f"the selection's delta must be in (0, {delta}), got {selection_delta}")
    multiplier = calibrate_gaussian_noise_multiplier(
        epsilon, delta, 1, alongside=[EpsilonDeltaDpEvent(selection_epsilon, selection_delta)])
    return DocumentFrequencyParams(multiplier, delta - selection_delta, terms_per_user, buckets)


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


def user_term_counts(conversation_counts: Iterable[dict[str, int]]) -> dict[str, int]:
    """A user's term counts: the sum of their conversations' clipped counts."""
    total: collections.Counter = collections.Counter()
    for counts in conversation_counts:
        total.update(counts)
    return dict(total)


def document_terms(counts: dict[str, int], terms_per_user: int) -> list[str]:
    """The terms a user adds to the document frequencies: their most frequent (ties: alphabetical)."""
    return sorted(counts, key=lambda t: (-counts[t], t))[:terms_per_user]


def bucket_of(term: str, buckets: int) -> int:
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % buckets


def document_vector_indices(counts: dict[str, int], terms_per_user: int, buckets: int) -> np.ndarray:
    """Coordinates one user adds 1 to: the distinct buckets of their document terms, and the count slot."""
    return np.array(sorted({bucket_of(t, buckets) for t in document_terms(counts, terms_per_user)}) + [buckets],
                    dtype=np.int64)


def add_gaussian_noise(exact: np.ndarray, params: DocumentFrequencyParams) -> np.ndarray:
    """exact + N(0, sigma^2) per coordinate, from PyDP's secure Gaussian sampler (PipelineDP's mechanism)."""
    mechanism = pipeline_dp.dp_computations.GaussianMechanism.create_from_std_deviation(
        params.noise_multiplier, params.sensitivity)
    return np.asarray(mechanism.add_noise(np.asarray(exact, dtype=np.float64)), dtype=np.float64)


@dataclasses.dataclass(frozen=True)
class NoisyDocumentFrequencies:
    """The DP release: noisy users per term bucket, and the noisy user count."""

    frequencies: np.ndarray
    documents: float

    @classmethod
    def from_noisy_vector(cls, vector: np.ndarray) -> "NoisyDocumentFrequencies":
        return cls(np.asarray(vector[:-1], dtype=np.float64), float(vector[-1]))

    def frequency(self, term: str) -> float:
        return float(self.frequencies[bucket_of(term, len(self.frequencies))])

    def idf(self, term: str) -> float:
        """Smoothed IDF; noisy values below 0 (frequency) or 1 (count) are clamped."""
        df = max(0.0, self.frequency(term))
        return math.log((1 + max(1.0, self.documents)) / (1 + df)) + 1.0


def top_tfidf_terms(counts: dict[str, int], frequencies: NoisyDocumentFrequencies, k: int,
                    min_noisy_frequency: float = 0.0) -> list[str]:
    """The k terms with the largest count x IDF (ties: alphabetical), among terms whose noisy
    document frequency is at least `min_noisy_frequency`: the rarest terms (a ticket number, a
    name) top any TF-IDF ranking yet can never pass partition selection, so they would only waste
    the user's k slots (sklearn's min_df, applied to the DP release)."""
    scored = sorted((-count * frequencies.idf(term), term) for term, count in counts.items()
                    if frequencies.frequency(term) >= min_noisy_frequency)
    return [term for _, term in scored[:k]]
