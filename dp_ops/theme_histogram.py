"""Themes: a user-level DP histogram over a fixed public partition, released every night.

Topics come from DP k-means and change from night to night; a theme does not. The themes are the
keyword set's categories (public, fixed before any data) and `OTHER_THEME`. Each kept conversation
goes to one theme by a public rule (`nearest_theme`: the category whose anchor, the mean direction of
its keywords' embeddings, is nearest its embedding; OTHER_THEME when none is at least
`MIN_THEME_SIMILARITY`), and votes its contribution weight w = 1/n_u there (the weight DP k-means and
the keyword votes give it: a user's weights sum to at most 1). A user's vote vector over the themes
therefore has L2 norm <= L1 norm <= 1, and one Gaussian sum of L2 sensitivity 1 over all themes releases
them: the same mechanism as the keyword votes (dp_ops.keyword_votes.weighted_vote_spend), over one
"cluster". A theme's noisy sum is in users (a user whose every conversation is in it adds 1).

Because the partition never changes, nights are directly comparable: a theme's size tonight against
its last week's needs no lineage (core/timeline.py). The stage is part of the run's joint calibration
(`themes` in --epsilon_weights) and so of the nightly plan: every window still fits its cap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from core.spend import MechanismSpend
from dp_ops.joint_calibration import StageRequest
from dp_ops.keyword_votes import VOTE_L2_SENSITIVITY, weighted_vote_spend

STAGE = "themes"
OTHER_THEME = "Other"
# The least cosine similarity (all-MiniLM-L6-v2) of a conversation to its nearest category anchor for
# it to count in that category; below it the conversation counts in OTHER_THEME. An anchor is the mean
# of about 40 keyword directions, so its cosines with on-topic text are lower than one keyword's.
MIN_THEME_SIMILARITY = 0.2
# The seeded test noise's stream (dp_ops.gaussian_noise): distinct from the keyword votes'.
NOISE_STREAM = 0x7E4E
# Two-sided 95% interval of a Gaussian.
Z_95 = 1.959963984540054


def theme_request(weight: float) -> StageRequest:
    """The themes' calibration request: one Gaussian sum of L2 sensitivity 1, drawn by
    dp_ops.gaussian_noise from the noise multiplier."""
    return StageRequest(STAGE, "gaussian", VOTE_L2_SENSITIVITY, weight, drawn_by_pipeline_dp=False)


def theme_spend(noise_multiplier: float, delta: float) -> MechanismSpend:
    return weighted_vote_spend(
        STAGE, "theme histogram: Gaussian sum per fixed public theme (the keyword set's categories and "
               "Other; each conversation weighs 1/n_u and votes its nearest theme; user L2 <= 1)",
        "theme sum, in users", noise_multiplier, delta)


def theme_columns(categories: Sequence[str]) -> tuple[str, ...]:
    """The release's partition, in order: the categories, then OTHER_THEME."""
    if OTHER_THEME in categories:
        raise ValueError(f"a keyword-set category may not be named {OTHER_THEME!r}: it is the themes' rest")
    return tuple(categories) + (OTHER_THEME,)


def theme_anchors(keyword_vectors: np.ndarray, keywords: Sequence[str], category_of: dict[str, str | None],
                  categories: Sequence[str]) -> np.ndarray:
    """(|categories|, d) unit rows: each category's mean keyword direction (public data only). A
    category without keywords gets a zero row, which no conversation is nearest."""
    unit = keyword_vectors / np.maximum(np.linalg.norm(keyword_vectors, axis=1, keepdims=True), 1e-12)
    rows = {category: i for i, category in enumerate(categories)}
    sums = np.zeros((len(categories), unit.shape[1]))
    for keyword, vector in zip(keywords, unit):
        row = rows.get(category_of.get(keyword))
        if row is not None:
            sums[row] += vector
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)


def nearest_theme(embedding: np.ndarray, anchors: np.ndarray, min_similarity: float = MIN_THEME_SIMILARITY) -> int:
    """The theme (row of `anchors`, or len(anchors) for OTHER_THEME) of one conversation. One
    conversation at a time (a matrix-vector product), so a batch gives each the result it gets alone.
    Raises ValueError for an embedding that is not a finite non-zero vector."""
    norm = float(np.linalg.norm(embedding))
    if not (math.isfinite(norm) and norm > 0):
        raise ValueError("the conversation's embedding is not a finite non-zero vector")
    similarity = anchors @ (np.asarray(embedding, dtype=np.float64) / norm)
    best = int(np.argmax(similarity))
    return best if similarity[best] >= min_similarity else len(anchors)


def themes_section(noisy: dict[str, float], sigma: float, sensitive: frozenset[str]) -> dict:
    """report.json's "themes": each theme's noisy size (users) with its 95% interval from the noise
    drawn, and its share of all themes' (clamped) sizes. Post-processing of the release."""
    clamped = {theme: max(0.0, value) for theme, value in noisy.items()}
    total = sum(clamped.values())
    margin = Z_95 * sigma
    return {
        "partition": "the keyword set's categories and Other: fixed, the same every night",
        "unit": "users (each user's conversations weigh 1 in all)",
        "interval": "95% for the true size from the noise drawn (1.96 sigma)",
        "sigma": sigma,
        "themes": [{"id": theme, "name": theme, "kind": "other" if theme == OTHER_THEME else "category",
                    "sensitive": theme in sensitive, "size": round(value, 2),
                    "low": round(max(0.0, value - margin), 2), "high": round(value + margin, 2),
                    "share": round(clamped[theme] / total, 6) if total > 0 else 0.0}
                   for theme, value in noisy.items()],
    }
