"""Themes: a user-level DP histogram over a fixed public partition, released every night.

Topics come from DP k-means and change from night to night; a theme does not. The themes are the
keyword set's categories (public, fixed before any data) and `OTHER_THEME`. Each kept conversation
goes to one theme by a public rule (`nearest_theme`: the category most of its THEME_NEIGHBOURS nearest
keywords belong to, the nearest of them breaking a tie; OTHER_THEME when even its nearest keyword is less
similar than the rule's floor, the run's encoder's own: config/embedding.py SimilarityFloors.theme).
A user's vote vector over the themes is the count of its kept
conversations in each theme scaled to L2 norm 1 (`user_theme_votes`), and one Gaussian sum of L2
sensitivity 1 over all themes releases them: a fixed-partition histogram (dp_ops/fixed_histogram.py, the
keyword votes' mechanism over one "cluster"), as the facets are. A user whose every conversation is in one
theme adds 1 to it; one whose conversations spread over several adds less to each, and more in all.

Because the partition never changes, nights are directly comparable: a theme's size tonight against
its last week's needs no lineage (publishing/timeline.py). The stage is part of the run's joint calibration
(`themes` in --epsilon_weights) and so of the nightly plan: every window still fits its cap.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from core.dp_stages import THEMES
from dp_ops.fixed_histogram import Z_95, FixedPartition, fixed_partition_request
from dp_ops.joint_calibration import StageRequest

STAGE = THEMES
OTHER_THEME = "Other"
# A conversation's theme is the category most of its THEME_NEIGHBOURS nearest keywords belong to. Measured
# on the generated stream (all-MiniLM-L6-v2, 10 nights): a planted topic's conversations go to its main
# theme 0.89 of the time on average this way, against 0.81 by the nearest category mean ("anchor") and 0.87
# by the one nearest keyword; video games 0.84 / 0.47 / 0.73 (an anchor, the mean of ~40 keyword
# directions, is near no single request, and the "Role-play" mean beat "Entertainment and media").
THEME_NEIGHBOURS = 5
# The seeded test noise's stream (dp_ops.gaussian_noise): distinct from the keyword votes'.
NOISE_STREAM = 0x7E4E
# How the report names the themes' release and its unit (the release's declaration, `theme_partition`).
THEME_MECHANISM = ("theme histogram: Gaussian sum per fixed public theme (the keyword set's categories and "
                   "Other; each conversation votes its nearest theme, each user's theme counts scaled to L2 norm 1)")
THEME_UNIT = "theme sum, in user votes (L2 norm 1 per user)"


def theme_request(weight: float) -> StageRequest:
    """The themes' calibration request: one fixed-partition histogram (a Gaussian sum of L2 sensitivity 1,
    drawn by dp_ops.gaussian_noise from the noise multiplier)."""
    return fixed_partition_request(STAGE, weight)


def theme_partition(columns: Sequence[str]) -> FixedPartition:
    """The themes' release as a fixed public partition (dp_ops/fixed_histogram.py): its spend and noise stream."""
    return FixedPartition(STAGE, tuple(columns), THEME_MECHANISM, THEME_UNIT, NOISE_STREAM)


def theme_columns(categories: Sequence[str]) -> tuple[str, ...]:
    """The release's partition, in order: the categories, then OTHER_THEME."""
    if OTHER_THEME in categories:
        raise ValueError(f"a keyword-set category may not be named {OTHER_THEME!r}: it is the themes' rest")
    return tuple(categories) + (OTHER_THEME,)


@dataclasses.dataclass(frozen=True)
class ThemeRule:
    """The public rule mapping a conversation to a theme: the keywords' unit directions (rows) and each
    keyword's theme (a column index; keywords without a category are left out). Public data only."""

    directions: np.ndarray  # (keywords, d), unit rows
    themes: np.ndarray  # (keywords,), int: the index of each row's category in the partition
    other: int  # OTHER_THEME's index: len(categories)
    # The least cosine of a conversation to its nearest keyword for it to count in a category (below it: in
    # OTHER_THEME), on the embedding model's own scale (its SimilarityFloors.theme).
    min_similarity: float

    @classmethod
    def of(cls, keyword_vectors: np.ndarray, keywords: Sequence[str], category_of: dict[str, str | None],
           categories: Sequence[str], *, min_similarity: float) -> "ThemeRule":
        columns = {category: i for i, category in enumerate(categories)}
        rows = [i for i, keyword in enumerate(keywords) if category_of.get(keyword) in columns]
        vectors = np.asarray(keyword_vectors, dtype=np.float64)
        vectors = vectors[rows] if rows else np.zeros((0, vectors.shape[1]))
        unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        # float32, as the embeddings: half the memory traffic of the one product per conversation.
        return cls(np.ascontiguousarray(unit, dtype=np.float32),
                   np.array([columns[category_of[keywords[i]]] for i in rows], dtype=int), len(categories),
                   float(min_similarity))


def theme_anchor(rule: ThemeRule, theme: int) -> np.ndarray | None:
    """A theme's public anchor: the direction of the sum of its keywords' unit directions (None for a theme
    without keywords). Where DP k-means is seeded for a theme that rose with no topic about it."""
    rows = rule.directions[rule.themes == theme]
    if not len(rows):
        return None
    total = rows.astype(np.float64).sum(axis=0)
    norm = float(np.linalg.norm(total))
    return total / norm if norm > 0 else None


def nearest_theme(embedding: np.ndarray, rule: ThemeRule, neighbours: int = THEME_NEIGHBOURS) -> int:
    """The theme (a category's index, or rule.other for OTHER_THEME) of one conversation: the category
    most of its `neighbours` nearest keywords belong to, the nearest such keyword breaking a tie. One
    conversation at a time (a matrix-vector product), so a batch gives each the result it gets alone.
    Raises ValueError for an embedding that is not a finite non-zero vector."""
    norm = float(np.linalg.norm(embedding))
    if not (math.isfinite(norm) and norm > 0):
        raise ValueError("the conversation's embedding is not a finite non-zero vector")
    if not len(rule.themes):
        return rule.other
    similarity = rule.directions @ (np.asarray(embedding, dtype=np.float32) / np.float32(norm))
    # The `neighbours` largest, then in order (nearest first; equal ones by keyword order): a full sort of
    # every keyword per conversation costs more than the product.
    top = np.argpartition(-similarity, neighbours - 1)[:neighbours] if len(similarity) > neighbours \
        else np.arange(len(similarity))
    nearest = top[np.lexsort((top, -similarity[top]))]
    if similarity[nearest[0]] < rule.min_similarity:
        return rule.other
    votes = collections.Counter(int(rule.themes[i]) for i in nearest)
    best = max(votes.values())
    return next(int(rule.themes[i]) for i in nearest if votes[int(rule.themes[i])] == best)


def user_theme_votes(themes: Sequence[str]) -> list[tuple[str, float]]:
    """One user's votes: (theme, count / L2 norm of the counts) for each theme among the themes of its kept
    conversations (any order in, sorted by theme out). The vector has L2 norm exactly 1, the Gaussian sum's
    sensitivity, whatever the user wrote.

    Why not the 1/n_u weight the votes use: its L1 norm is 1, so a user spread evenly over m themes has
    L2 norm 1/sqrt(m) and leaves the rest of the sensitivity unused. On the real-text stream (600
    conversations a night from ~165 users; docs/production.md#themes) the held-back theme's noiseless sum
    rose by ~4 a night with 1/n_u and by ~6.5 with this, against a per-night sigma of 2.5-6."""
    counts = collections.Counter(themes)
    norm = math.sqrt(sum(count * count for count in counts.values()))
    return [(theme, counts[theme] / norm) for theme in sorted(counts)]


def themes_section(noisy: dict[str, float], sigma: float, sensitive: frozenset[str]) -> dict:
    """report.json's "themes": each theme's noisy size (users) with its 95% interval from the noise
    drawn, and its share of all themes' (clamped) sizes. Post-processing of the release."""
    clamped = {theme: max(0.0, value) for theme, value in noisy.items()}
    total = sum(clamped.values())
    margin = Z_95 * sigma
    return {
        "partition": "the keyword set's categories and Other: fixed, the same every night",
        "unit": "user votes (each user's theme counts scaled to L2 norm 1: a user in one theme adds 1 to it)",
        "interval": "95% for the true size from the noise drawn (1.96 sigma)",
        "sigma": sigma,
        "themes": [{"id": theme, "name": theme, "kind": "other" if theme == OTHER_THEME else "category",
                    "sensitive": theme in sensitive, "size": round(value, 2),
                    "low": round(max(0.0, value - margin), 2), "high": round(value + margin, 2),
                    "share": round(clamped[theme] / total, 6) if total > 0 else 0.0}
                   for theme, value in noisy.items()],
    }
