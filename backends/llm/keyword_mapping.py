"""Maps a model's own topic keywords onto the public keyword set K.

Small models asked to pick from a long K invent words or, constrained to K, pick nonsense (a
"kubernetes" for bread kneading); asked for their own keywords they write good ones. Each word is
mapped to K on its own: an exact match (after case and spacing) first, else the K keyword whose
embedding is nearest, if the cosine similarity reaches the floor. A conversation's keywords depend on
its own answer only; what cannot be mapped is dropped, and nothing outside K ever comes out.
"""

from __future__ import annotations

import numpy as np

from config.embedding import Encoder


def _normal(word: str) -> str:
    return " ".join(word.lower().split())


class ExactKeywordMapper:
    """Keeps the words that are keywords of K (up to case and spacing)."""

    def __init__(self, keywords: tuple[str, ...]):
        self.keywords = tuple(keywords)
        self._index = {_normal(k): k for k in self.keywords}

    def setup(self) -> None:
        pass

    def _exact(self, word: str) -> str | None:
        return self._index.get(_normal(word))

    def map(self, words_per_row: list[list[str]], max_keywords: int) -> list[list[str]]:
        return [self._distinct([self._exact(w) for w in words], max_keywords) for words in words_per_row]

    @staticmethod
    def _distinct(mapped: list[str | None], max_keywords: int) -> list[str]:
        return [k for k in dict.fromkeys(mapped) if k is not None][:max_keywords]


class EmbeddingKeywordMapper(ExactKeywordMapper):
    """Exact matches, else the nearest keyword of K by embedding above `min_similarity` (default: the encoder's
    word_to_keyword floor). `encoder`: the run's, so the model's words and K are embedded as the conversations
    were."""

    def __init__(self, keywords: tuple[str, ...], encoder: Encoder, min_similarity: float | None = None):
        super().__init__(keywords)
        self.encoder = encoder
        self.min_similarity = encoder.floors.word_to_keyword if min_similarity is None else min_similarity
        self._keyword_embeddings: np.ndarray | None = None

    def setup(self) -> None:
        if self._keyword_embeddings is None:
            from backends import embedding
            self._keyword_embeddings = embedding.encode_public(self.encoder, self.keywords)

    def nearest(self, words: list[str]) -> list[tuple[str, float]]:
        """(nearest keyword of K, cosine similarity) per word."""
        if not words:
            return []
        self.setup()
        from backends import embedding
        from dp_ops.rowwise import rowwise_matmul
        # One word at a time, so a word's vector never depends on the other words (other users') batched with it.
        vectors = np.concatenate([embedding.encode(self.encoder, [word]) for word in words])
        similarities = rowwise_matmul(vectors, self._keyword_embeddings.T)
        best = similarities.argmax(axis=1)
        return [(self.keywords[j], float(similarities[i, j])) for i, j in enumerate(best)]

    def map(self, words_per_row: list[list[str]], max_keywords: int) -> list[list[str]]:
        unmatched = sorted({w for words in words_per_row for w in words if self._exact(w) is None})
        near = {w: k for w, (k, score) in zip(unmatched, self.nearest(unmatched)) if score >= self.min_similarity}
        return [self._distinct([self._exact(w) or near.get(w) for w in words], max_keywords)
                for words in words_per_row]

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_keyword_embeddings"] = None  # recomputed on the worker
        return state
