"""The record types that travel between stages. None of them is ever released."""

from __future__ import annotations

import dataclasses

import numpy as np

ROLES = ("user", "assistant", "system")


@dataclasses.dataclass(frozen=True)
class Message:
    role: str
    content: str


@dataclasses.dataclass(frozen=True)
class Conversation:
    """A validated input record."""

    conversation_id: str
    user_id: str
    timestamp: str | None
    messages: tuple[Message, ...]

    def user_turns(self) -> list[str]:
        return [m.content for m in self.messages if m.role == "user"]


@dataclasses.dataclass(frozen=True)
class DeadLetter:
    """A rejected record, with why. Written only to private/dead_letter/.

    `stage` is where it was rejected: "read" (parsing and validation) or a later per-record step
    ("facets", "embed", "select_keywords"), which names the record by `conversation_id`. Where a
    record was read from: `line` (1-based line of a compressed file, or Parquet row) and `offset`
    (byte offset of the line in an uncompressed JSON Lines file), whichever is known.
    `unread_bytes` is set for `unreadable_file`: how much of the file, as stored, was not read.
    """

    source: str
    line: int | None
    reason: str
    detail: str
    raw: str
    offset: int | None = None
    stage: str = "read"
    conversation_id: str | None = None
    unread_bytes: int | None = None

    def __post_init__(self):
        # An error message or a raw line may quote the text that broke a step; Beam's coders and the
        # private writers cannot carry a lone surrogate, so every dead letter holds strict UTF-8.
        for field in ("detail", "raw"):
            text = getattr(self, field)
            object.__setattr__(self, field, text.encode("utf-8", "backslashreplace").decode("utf-8"))

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class WeightedConversation:
    """A conversation kept by contribution bounding; `weight` = 1 / (user's kept conversations)."""

    conversation: Conversation
    weight: float


@dataclasses.dataclass(frozen=True)
class Facet:
    """The text that represents a conversation for embedding and keyword selection (private)."""

    conversation_id: str
    user_id: str
    weight: float
    text: str


@dataclasses.dataclass
class ConversationBlock:
    """A batch of conversations as numpy arrays: the unit that embedding and clustering work on.

    Vectors travel as one (n, dim) array per block, not one Python object per vector.
    `points` (projected clustering space) and `cluster_ids` are filled in by later stages.
    """

    conversation_ids: list[str]
    user_ids: list[str]
    weights: np.ndarray
    facets: list[str]
    embeddings: np.ndarray
    points: np.ndarray | None = None
    cluster_ids: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.conversation_ids)

    def subset(self, mask: np.ndarray) -> "ConversationBlock":
        index = np.flatnonzero(mask)
        pick = lambda values: [values[i] for i in index]  # noqa: E731
        return ConversationBlock(
            conversation_ids=pick(self.conversation_ids),
            user_ids=pick(self.user_ids),
            weights=self.weights[index],
            facets=pick(self.facets),
            embeddings=self.embeddings[index],
            points=None if self.points is None else self.points[index],
            cluster_ids=None if self.cluster_ids is None else self.cluster_ids[index],
        )
