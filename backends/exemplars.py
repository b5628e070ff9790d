"""Synthetic example requests for released topics, evolved toward each topic's DP centre.

Private Evolution (Aug-PE; SecPE, "Secret-Protected Evolution for Differentially Private Synthetic
Text Generation"): a writer drafts candidate requests, the candidates nearest the private data's
representatives are kept, and the writer varies the winners, round after round. SecPE votes against
noisy cluster representatives instead of every private sample; here those representatives are the
DP k-means centres the job has already released. The writer sees the topic's released name,
description and keywords only, the candidates are embedded with the public model and projected
exactly as the conversations were, and they are ranked by cosine similarity to the released centre:
every step is post-processing of released values, so exemplars cost no privacy budget.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Callable

import numpy as np

from backends.interfaces import ExemplarWriter
from backends.label_evidence import UNVERIFIED
from core.pii_patterns import PII_PATTERNS

MIN_EXEMPLAR_CHARS = 8
MAX_EXEMPLAR_CHARS = 300
# Two candidates this close in the clustering space say the same thing: only the nearer is shown.
NEAR_DUPLICATE_SIMILARITY = 0.95


@dataclasses.dataclass(frozen=True)
class Exemplar:
    text: str
    similarity: float  # cosine with the topic's DP centre, in the clustering space
    round: int  # 0: the writer's first draft; r >= 1: a variation written in round r

    def to_json(self) -> dict:
        return {"text": self.text, "similarity_to_centre": round(self.similarity, 4)}


@dataclasses.dataclass(frozen=True)
class Evolution:
    """What one topic's evolution kept: `exemplars` (released) and, for evaluation, `first_draft`
    (the best of round 0 alone, i.e. without evolution) and the candidates dropped, by reason."""

    exemplars: list[Exemplar]
    first_draft: list[Exemplar]
    candidates_scored: int
    dropped: dict[str, int]


def _normalised(text: str) -> str:
    return " ".join(str(text).split())


def candidate_problem(text: str) -> str | None:
    """Why a written candidate cannot be an exemplar (None: it can). PII-like text is refused even
    though the writer never saw user text: the release gate would stop the whole report for it."""
    if len(text) < MIN_EXEMPLAR_CHARS:
        return "too_short"
    if len(text) > MAX_EXEMPLAR_CHARS:
        return "too_long"
    if any(pattern.search(text) for pattern in PII_PATTERNS.values()):
        return "pii_like"
    return None


def usable_candidates(texts: list[str], seen: set[str], dropped: collections.Counter) -> list[str]:
    """The new, well-formed candidates among `texts` (whitespace normalised, case-insensitive
    duplicates of each other or of `seen` removed); adds them to `seen` and counts the others."""
    usable = []
    for text in texts:
        text = _normalised(text)
        problem = candidate_problem(text)
        if problem is None and text.casefold() in seen:
            problem = "duplicate"
        if problem is not None:
            dropped[problem] += 1
            continue
        seen.add(text.casefold())
        usable.append(text)
    return usable


def best_distinct(scored: list[tuple[Exemplar, np.ndarray]], count: int) -> list[Exemplar]:
    """The `count` most similar to the centre, skipping near-duplicates of one already chosen
    (ties: the earlier candidate)."""
    chosen: list[tuple[Exemplar, np.ndarray]] = []
    for exemplar, point in sorted(scored, key=lambda item: -item[0].similarity):
        if len(chosen) == count:
            break
        if all(float(point @ other) < NEAR_DUPLICATE_SIMILARITY for _, other in chosen):
            chosen.append((exemplar, point))
    return [exemplar for exemplar, _ in chosen]


def parents_per_round(count: int) -> int:
    """Candidates varied in each round: the best few, never fewer than are released."""
    return max(count, 3)


def variations_per_round(candidates: int, count: int) -> int:
    """Variations asked for in each round: half a first draft, and never fewer than are released."""
    return max(count, candidates // 2)


def evolve_exemplars(writer: ExemplarWriter, topic: dict, centre: np.ndarray,
                     points_of: Callable[[list[str]], np.ndarray], count: int, candidates: int = 20,
                     rounds: int = 2, refuse: Callable[[list[str]], list[str | None]] | None = None,
                     search_unverified: bool = False) -> Evolution:
    """Up to `count` exemplars for one released topic.

    `centre`: the topic's released DP centre (clustering space); `points_of`: texts -> unit rows in
    that space (the job's embedding model, basis and dimension). Round 0 drafts `candidates`; each
    of `rounds` rounds varies the best few and ranks everything written so far again. A topic whose
    label is unverified (backends/label_evidence.py) gets none: examples written from a sensitive
    guess would show the reader requests that no vote of its conversations supports.
    `refuse`: texts -> a reason (counted in `dropped`) or None for each, for what a caller may not
    keep beyond candidate_problem's rules; the centre decoder (backends/centre_decoder.py) runs this
    same search over candidate names and refuses those of a sensitive category the topic's votes do
    not support, before they are scored (so they are never varied either).
    `search_unverified`: search for an unverified topic too. Only the centre decoder asks, and only with a
    `refuse` that refuses every sensitive candidate for such a topic: a non-sensitive name is no
    finding of the guess, where an exemplar is a request the reader would take as one."""
    if topic.get("label_evidence") == UNVERIFIED and not (search_unverified and refuse is not None):
        return Evolution([], [], 0, {})
    norm = float(np.linalg.norm(centre))
    direction = np.asarray(centre, dtype=np.float32) / norm if norm > 0 else np.zeros_like(centre, dtype=np.float32)
    seen: set[str] = set()
    dropped: collections.Counter = collections.Counter()
    scored: list[tuple[Exemplar, np.ndarray]] = []

    def usable(texts: list[str]) -> list[str]:
        kept = usable_candidates(texts, seen, dropped)
        if refuse is None or not kept:
            return kept
        problems = refuse(kept)
        dropped.update(problem for problem in problems if problem is not None)
        return [text for text, problem in zip(kept, problems) if problem is None]

    def score(texts: list[str], round_: int) -> None:
        if texts:
            points = points_of(texts)
            scored.extend((Exemplar(text, float(point @ direction), round_), point)
                          for text, point in zip(texts, points))

    score(usable(writer.write(topic, candidates)), 0)
    first_draft = best_distinct(scored, count)
    parents = parents_per_round(count)
    varied: set[str] = set()
    for round_ in range(1, rounds + 1):
        # Each candidate is varied once: a deterministic writer (templates, a model at temperature 0)
        # asked again would only repeat itself, so a round whose winners were all varied ends the search.
        winners = [e.text for e in best_distinct(scored, parents) if e.text not in varied]
        if not winners:
            break
        varied.update(winners)
        score(usable(writer.vary(topic, winners, variations_per_round(candidates, count))), round_)
    return Evolution(best_distinct(scored, count), first_draft, len(scored), dict(dropped))
