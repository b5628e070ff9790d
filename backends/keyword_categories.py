"""The categories of the public keyword set K, and a topic's dominant category.

Public data only: a keyword's category comes from the keyword set file (its '## Name' sections or
its JSON "categories"). A set without categories (a DP-built JSON set, say) gets, for each keyword
without one, the category of its nearest bundled keyword by embedding, if that is close enough:
post-processing of the public set and of the public bundled set, no conversation is involved.
Used by the offline namer (topic names) and the topic hierarchy (groups), so both read a topic's
keywords the same way.
"""

from __future__ import annotations

import numpy as np

from config.embedding import Encoder


def rank_weight(rank: int) -> float:
    """How much a keyword's category counts towards its topic's: released keywords are ordered by
    noisy count, so an earlier one says more about the topic."""
    return 1.0 / (rank + 1)


def category_weights(keywords: list[str], category_of: dict[str, str | None]) -> dict[str, float]:
    """{category: summed rank weight of the keywords in it}, in order of first appearance."""
    weights: dict[str, float] = {}
    for rank, keyword in enumerate(keywords):
        category = category_of.get(keyword)
        if category is not None:
            weights[category] = weights.get(category, 0.0) + rank_weight(rank)
    return weights


def dominant_category(keywords: list[str], category_of: dict[str, str | None]) -> str | None:
    """The category with the largest rank-weighted share of `keywords` (ties: the one met first);
    None when no keyword has a category."""
    weights = category_weights(keywords, category_of)
    # max() keeps the first of equal weights, and dicts keep insertion (rank) order.
    return max(weights, key=weights.__getitem__) if weights else None


class KeywordCategories:
    """{keyword: category or None} for the run's keyword set, picklable; `setup()` fills in the
    missing categories from the bundled set (nearest keyword by embedding) when an encoder (the run's) is
    given."""

    def __init__(self, category_of: dict[str, str | None], encoder: Encoder | None = None,
                 sensitive: frozenset[str] = frozenset()):
        self._given = dict(category_of)
        self.sensitive = frozenset(sensitive)
        self.encoder = encoder
        self._resolved: dict[str, str | None] | None = None

    @classmethod
    def of_keyword_set(cls, keyword_set, encoder: Encoder | None = None) -> KeywordCategories:
        """The set's categories; sensitive are those it marks and those the bundled set marks (a set
        without categories takes the bundled set's, so a bundled category keeps its mark)."""
        from backends.keyword_set import load_keyword_set
        sensitive = keyword_set.sensitive_categories | load_keyword_set().sensitive_categories
        return cls(keyword_set.category_of(), encoder, sensitive)

    @property
    def names(self) -> tuple[str, ...]:
        """Every category a keyword can have, sorted, known without setup(): the set's own, and the
        bundled set's when some keyword's category is left to setup() (public, so fixed before any data)."""
        names = {c for c in self._given.values() if c is not None}
        if self.encoder is not None and any(c is None for c in self._given.values()):
            from backends.keyword_set import load_keyword_set
            names |= {c for c in load_keyword_set().category_of().values() if c is not None}
        return tuple(sorted(names))

    def setup(self) -> None:
        if self._resolved is not None:
            return
        resolved = dict(self._given)
        missing = [k for k, c in resolved.items() if c is None]
        if missing and self.encoder is not None:
            from backends.embedding import encode_public
            resolved.update(nearest_bundled_categories(  # a keyword set is public, so its vectors are memoised
                missing, lambda texts: encode_public(self.encoder, texts), self.encoder.floors.nearest_category))
        self._resolved = resolved

    @property
    def category_of(self) -> dict[str, str | None]:
        self.setup()
        return self._resolved

    def dominant(self, keywords: list[str]) -> str | None:
        return dominant_category(keywords, self.category_of)

    def __getstate__(self):
        # Workers resolve the missing categories in setup(); don't ship the result.
        state = dict(self.__dict__)
        state["_resolved"] = None
        return state


def nearest_bundled_categories(keywords: list[str], embed, min_similarity: float) -> dict[str, str | None]:
    """{keyword: category of the bundled set's nearest keyword, or None below `min_similarity`};
    a keyword that is itself in the bundled set takes its own category. `embed` maps texts to unit rows."""
    from backends.keyword_set import load_keyword_set
    bundled = load_keyword_set()
    bundled_category = {k: c for k, c in bundled.category_of().items() if c is not None}
    result = {k: bundled_category[k] for k in keywords if k in bundled_category}
    rest = [k for k in keywords if k not in result]
    if not rest or not bundled_category:
        return {**result, **{k: None for k in rest}}
    reference = list(bundled_category)
    vectors = np.asarray(embed(rest + reference), dtype=np.float64)
    similarity = vectors[: len(rest)] @ vectors[len(rest):].T
    nearest = np.argmax(similarity, axis=1)
    for row, keyword in enumerate(rest):
        best = int(nearest[row])
        result[keyword] = bundled_category[reference[best]] if similarity[row, best] >= min_similarity else None
    return result
