"""The small interfaces behind the pipeline's model-shaped steps.

Implementations must be picklable (Beam ships them to workers) and do heavy set-up in `setup()`,
which every worker calls once before use.
"""

from __future__ import annotations

import abc

import numpy as np

from transforms.records import Conversation


class FacetExtractor(abc.ABC):
    """Turns a conversation into the private text that represents it (never released)."""

    def setup(self) -> None:
        """Loads models or clients; called once per worker."""

    @abc.abstractmethod
    def extract(self, conversation: Conversation) -> str:
        ...


class KeywordSelector(abc.ABC):
    """Picks up to `max_keywords` keywords from the public set K for each conversation.

    Whatever it returns is filtered against K by the pipeline, so a misbehaving model cannot put a
    word outside K into the DP histogram.
    """

    def setup(self) -> None:
        """Loads models or clients; called once per worker."""

    @abc.abstractmethod
    def select(self, facets: list[str], embeddings: np.ndarray, max_keywords: int) -> list[list[str]]:
        """One list of keywords per conversation (facet text and its embedding row)."""


class ClusterNamer(abc.ABC):
    """Names a topic from its DP-released keywords, and nothing else."""

    def setup(self) -> None:
        """Loads models or clients; called once per worker."""

    @abc.abstractmethod
    def name(self, keywords: list[str]) -> tuple[str, str]:
        """(name of at most 10 words, two-sentence description)."""
