"""The small interfaces behind the pipeline's model-shaped steps.

Implementations must be picklable (Beam ships them to workers) and do heavy set-up in `setup()`,
which every worker calls once before use.
"""

from __future__ import annotations

import abc

import numpy as np

from core.records import Conversation


class FacetExtractor(abc.ABC):
    """Turns a conversation into the private text that represents it (never released)."""

    def setup(self) -> None:
        """Loads models or clients; called once per worker."""

    def teardown(self) -> None:
        """Releases what setup() took (an LLM client, the local model server); called when the worker's DoFn goes."""

    # Conversations per extract_batch call; > 1 makes ExtractFacets batch its input (LLM backends
    # fan a batch out over a thread pool).
    batch_size = 1

    @abc.abstractmethod
    def extract(self, conversation: Conversation) -> str:
        ...

    def extract_batch(self, conversations: list[Conversation]) -> list[str]:
        return [self.extract(conversation) for conversation in conversations]


class KeywordSelector(abc.ABC):
    """Picks up to `max_keywords` keywords from the public set K for each conversation.

    Whatever it returns is filtered against K by the pipeline, so a misbehaving model cannot put a
    word outside K into the DP histogram.
    """

    def setup(self) -> None:
        """Loads models or clients; called once per worker."""

    def teardown(self) -> None:
        """Releases what setup() took (an LLM client, the local model server); called when the worker's DoFn goes."""

    @abc.abstractmethod
    def select(self, facets: list[str], embeddings: np.ndarray, max_keywords: int) -> list[list[str]]:
        """One list of keywords per conversation (facet text and its embedding row)."""


class ClusterNamer(abc.ABC):
    """Names a topic from its DP-released keywords, and nothing else."""

    def setup(self) -> None:
        """Loads models or clients; called once per worker."""

    def teardown(self) -> None:
        """Releases what setup() took (an LLM client, the local model server); called when the worker's DoFn goes."""

    @abc.abstractmethod
    def name(self, keywords: list[str]) -> tuple[str, str]:
        """(name of at most 10 words, two-sentence description)."""

    def name_group(self, keywords: list[str], member_names: list[str]) -> tuple[str, str]:
        """Names a group of released topics (the report's hierarchy) from the members' released keywords
        and names. Both are released data, so this is post-processing too. Default: by the keywords."""
        return self.name(keywords)


class KeywordProposer(abc.ABC):
    """Proposes free-form keywords for conversations (the `llm` and `hybrid` keyword-set methods).

    Its output is private: a proposed word enters the keyword set only through DP partition
    selection, so it may return anything.
    """

    def setup(self) -> None:
        """Loads models or clients; called once per worker."""

    def teardown(self) -> None:
        """Releases what setup() took (an LLM client, the local model server); called when the worker's DoFn goes."""

    @abc.abstractmethod
    def propose(self, facets: list[str], max_keywords: int) -> list[list[str]]:
        """Up to `max_keywords` (3-5 in URANIA) keywords per facet text, one list per facet."""


class KeywordSetRefiner(abc.ABC):
    """One round of URANIA's iterative refinement of an already public keyword list.

    It only ever sees public or DP-released words, never conversation text.
    """

    def setup(self) -> None:
        """Loads models or clients; called once per worker."""

    def teardown(self) -> None:
        """Releases what setup() took (an LLM client, the local model server); called when the worker's DoFn goes."""

    @abc.abstractmethod
    def refine(self, keywords: list[str], target_size: int) -> tuple[list[str], list[str]]:
        """(words_to_remove, words_to_append) for a list that should end near `target_size`."""


class ExemplarWriter(abc.ABC):
    """Writes synthetic user requests for a released topic from its released name, description and
    keywords, and nothing else (backends/exemplars.py evolves them toward the topic's DP centre).

    `topic` is the report's topic: {"name", "description", "keywords"} (other keys are ignored).
    Whatever it returns is filtered by the pipeline (length, duplicates, PII-like text)."""

    def setup(self) -> None:
        """Loads models or clients; called once per worker."""

    def teardown(self) -> None:
        """Releases what setup() took (an LLM client, the local model server); called when the worker's DoFn goes."""

    @abc.abstractmethod
    def write(self, topic: dict, count: int) -> list[str]:
        """About `count` different requests a user might make on this topic."""

    @abc.abstractmethod
    def vary(self, topic: dict, winners: list[str], count: int) -> list[str]:
        """About `count` new requests that vary `winners` (earlier candidates that fit the topic best)."""
