"""Deterministic offline implementations of the pluggable steps (the defaults)."""

from __future__ import annotations

import numpy as np

from backends import embedding
from backends.interfaces import ClusterNamer, FacetExtractor, KeywordSelector
from backends.keyword_categories import KeywordCategories, dominant_category
from config.embedding import Encoder
from core.label_sources import CENTROID_SOURCE
from core.records import Conversation
from dp_ops.rowwise import rowwise_matmul

MAX_NAME_WORDS = 10
# Words a cut name must not end on ("Python coding: unit testing and").
_DANGLING = {"and", "or", "of", "for", "the", "a", "-"}


def cut_name(name: str, words: int) -> str:
    """`name`'s first `words` words (at least one), without a dangling last word or trailing ',' or ':'."""
    kept = name.split()[: max(1, words)]
    while len(kept) > 1 and (kept[-1].lower() in _DANGLING or kept[-1].endswith((",", ":"))):
        kept = kept[:-1]
    return " ".join(kept).rstrip(",:")


class UserTurnsFacetExtractor(FacetExtractor):
    """The user turns, joined and truncated: what the user asked about, without the replies."""

    def __init__(self, max_chars: int = 1000):
        self.max_chars = max_chars

    def extract(self, conversation: Conversation) -> str:
        return "\n".join(turn.strip() for turn in conversation.user_turns() if turn.strip())[: self.max_chars]


class EmbeddingKeywordSelector(KeywordSelector):
    """The keywords whose embeddings are nearest the conversation's, above a similarity floor (--keyword_min_similarity;
    None: the encoder's keyword_vote floor). `encoder`: the run's, which embedded the conversations, so the
    keywords land in the same space."""

    def __init__(self, keywords: tuple[str, ...], encoder: Encoder, min_similarity: float | None = None):
        self.keywords = tuple(keywords)
        self.encoder = encoder
        self.min_similarity = encoder.floors.keyword_vote if min_similarity is None else min_similarity
        self._keyword_embeddings: np.ndarray | None = None

    def setup(self) -> None:
        if self._keyword_embeddings is None:
            self._keyword_embeddings = embedding.encode_public(self.encoder, self.keywords)

    def select(self, facets: list[str], embeddings: np.ndarray, max_keywords: int) -> list[list[str]]:
        self.setup()
        # Row by row, so a conversation's keywords never depend on the others in its block.
        similarities = rowwise_matmul(embeddings, self._keyword_embeddings.T)
        top = np.argsort(-similarities, axis=1, kind="stable")[:, :max_keywords]
        return [
            [self.keywords[j] for j in row if similarities[i, j] >= self.min_similarity]
            for i, row in enumerate(top)
        ]

    def __getstate__(self):
        # Workers recompute the keyword embeddings in setup(); don't ship them.
        state = dict(self.__dict__)
        state["_keyword_embeddings"] = None
        return state


def join_words(words: list[str]) -> str:
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " and " + words[-1]


def _fitting(words_so_far: int, keywords: list[str], limit: int = MAX_NAME_WORDS) -> list[str]:
    """The leading keywords that, joined, fit in `limit` words after `words_so_far`."""
    used: list[str] = []
    for keyword in keywords:
        # A keyword after the first adds an "and" (or a comma) to the name.
        if words_so_far + len(keyword.split()) + (1 if used else 0) > limit:
            break
        words_so_far += len(keyword.split()) + (1 if used else 0)
        used.append(keyword)
    return used


def in_running_text(category: str) -> str:
    """"Python coding" -> "python coding" inside a sentence; "SQL databases" stays (an acronym)."""
    return category[:1].lower() + category[1:] if category[1:2].islower() else category


UNLABELLED_NAME = "Unlabelled topic"
RANKING_NOTE = "keywords are ranked by how often this topic's conversations chose them (DP counts)."
CENTRE_NOTE = ("keywords are the ones nearest the topic's DP centre, not ones its conversations chose (no "
               "keyword vote of its own cleared the privacy noise, or, with --keyword_mode centroid, none was taken).")


def note_label_source(description: str, source: str) -> str:
    """The description of a topic labelled by the fallback (the keywords nearest its DP centre) must
    not claim that its conversations chose them: the offline namer's ranking note is swapped."""
    return description.replace(RANKING_NOTE, CENTRE_NOTE) if source == CENTROID_SOURCE else description


class KeywordClusterNamer(ClusterNamer):
    """Names a topic by the dominant category of its released keywords and its top keywords in that
    category, e.g. "Python coding: unit testing and error message". Keywords of other categories stay
    out of the name (they are in the description and the keyword list), so a topic whose keywords span
    two unrelated categories is never named after both. Uses nothing but the released keywords and the
    keyword set's public categories (`categories`; without any, names are the top keywords)."""

    name_keywords = 2  # at most this many keywords after the category: a name, not a list

    def __init__(self, categories: KeywordCategories | None = None):
        self.categories = categories

    def setup(self) -> None:
        if self.categories is not None:
            self.categories.setup()

    def _category_of(self) -> dict[str, str | None]:
        return self.categories.category_of if self.categories is not None else {}

    def name(self, keywords: list[str]) -> tuple[str, str]:
        keywords = list(keywords)
        if not keywords:
            return (UNLABELLED_NAME,
                    "No keyword was frequent enough in this topic to stand out from the privacy noise. "
                    "Its size is still a DP estimate.")
        category_of = self._category_of()
        category = dominant_category(keywords, category_of)
        if category is None:
            return self._name_without_category(keywords)
        in_category = [k for k in keywords if category_of.get(k) == category]
        elsewhere = [k for k in keywords if category_of.get(k) != category]
        shown = [k for k in in_category if k.casefold() != category.casefold()]
        category_words = category.split()[:MAX_NAME_WORDS]
        named = _fitting(len(category_words), shown[: self.name_keywords])
        name = " ".join(category_words) + (": " + join_words(named) if named else "")
        about = f"Requests about {in_running_text(category)}"
        if shown:
            about += f", most often {join_words(shown[:2])}"
            if shown[2:]:
                about += f", also {join_words(shown[2:])}"
        if elsewhere:
            about += f"; some also mention {join_words(elsewhere)}"
        share = ("All of its keywords are in this category" if not elsewhere
                 else f"{len(in_category)} of its {len(keywords)} keywords {'is' if len(in_category) == 1 else 'are'} "
                      "in this category")
        return name[:1].upper() + name[1:], f"{about}. {share}; {RANKING_NOTE}"

    def _name_without_category(self, keywords: list[str]) -> tuple[str, str]:
        named = _fitting(0, keywords[: self.name_keywords]) or [" ".join(keywords[0].split()[:MAX_NAME_WORDS])]
        name = join_words(named)
        about = f"Requests about {join_words(keywords[:2])}"
        if keywords[2:]:
            about += f", also {join_words(keywords[2:])}"
        return name[:1].upper() + name[1:], f"{about}. The keyword set gives these keywords no category; " \
                                            f"{RANKING_NOTE}"
