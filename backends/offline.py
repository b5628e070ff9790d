"""Deterministic offline implementations of the pluggable steps (the defaults)."""

from __future__ import annotations

import numpy as np

from backends import embedding
from backends.interfaces import ClusterNamer, FacetExtractor, KeywordSelector
from core.records import Conversation
from dp_ops.rowwise import rowwise_matmul

MAX_NAME_WORDS = 10


class UserTurnsFacetExtractor(FacetExtractor):
    """The user turns, joined and truncated: what the user asked about, without the replies."""

    def __init__(self, max_chars: int = 1000):
        self.max_chars = max_chars

    def extract(self, conversation: Conversation) -> str:
        return "\n".join(turn.strip() for turn in conversation.user_turns() if turn.strip())[: self.max_chars]


class EmbeddingKeywordSelector(KeywordSelector):
    """The keywords whose embeddings are nearest the conversation's, above a similarity floor."""

    def __init__(self, keywords: tuple[str, ...], model_name: str, min_similarity: float = 0.3,
                 backend: str = "torch"):
        self.keywords = tuple(keywords)
        self.model_name = model_name
        self.backend = backend  # the conversations' backend, so keywords land in the same space
        self.min_similarity = min_similarity
        self._keyword_embeddings: np.ndarray | None = None

    def setup(self) -> None:
        if self._keyword_embeddings is None:
            self._keyword_embeddings = embedding.embed_texts(self.model_name, list(self.keywords),
                                                            backend=self.backend)

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


def _join_words(words: list[str]) -> str:
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " and " + words[-1]


class KeywordClusterNamer(ClusterNamer):
    """Names a topic by its top keywords, in order. Uses nothing but the keywords."""

    def name(self, keywords: list[str]) -> tuple[str, str]:
        if not keywords:
            return ("Unlabelled topic",
                    "No keyword was frequent enough in this topic to stand out from the privacy noise. "
                    "Its size is still a DP estimate.")
        name_words: list[str] = []
        used: list[str] = []
        for keyword in keywords:
            words = keyword.split()
            if len(name_words) + len(words) + (1 if used else 0) > MAX_NAME_WORDS:
                break
            name_words += words
            used.append(keyword)
        name = _join_words(used or [" ".join(keywords[0].split()[:MAX_NAME_WORDS])])
        description = (f"Conversations about {_join_words(keywords)}. "
                       f"Keywords are listed from most to least often chosen for this topic's conversations.")
        return name[:1].upper() + name[1:], description
