"""EmbedConversations: facets -> ConversationBlocks of unit-normalised sentence embeddings.

The model is loaded once per worker process (backends.embedding caches it) and fed blocks of
`block_size` facets; each block leaves as one numpy block. Inside, backends.embedding encodes each
text in a batch of fixed shape set by its own token count (fixed_shape_batches: lengths rounded up
to BUCKET_STEP, BATCH_TOKENS a batch), so a text's vector never depends on the other texts of its
block; `encode_batch_size` is kept for callers and ignored (docs/performance.md measures the cost).

A block whose encoding raises is encoded again one text at a time, and a text that fails alone, or
whose vector is not a finite unit vector (one NaN would poison every DP k-means sum), is
dead-lettered alone: every backend gives each text the vector it would get alone (tested).
"""

from __future__ import annotations

import time

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from backends import embedding
from config.embedding import Encoder
from core.records import ConversationBlock, Facet
from transforms import progress
from transforms.record_isolation import StageOutput, run_isolated, split_dead_letters, stage_dead_letter
from transforms.stage_timing import NAMESPACE as STAGE_MICROS

STAGE = "embed"
# Vectors are unit-normalised by the backends; anything farther off than float32 rounding is broken.
_UNIT_NORM_TOLERANCE = 1e-3


def _vector_problem(vector: np.ndarray) -> str | None:
    if not np.all(np.isfinite(vector)):
        return "the embedding has non-finite values"
    if abs(float(np.linalg.norm(vector)) - 1.0) > _UNIT_NORM_TOLERANCE:
        return f"the embedding is not unit-length (norm {float(np.linalg.norm(vector)):.4g})"
    return None


class _EmbedBatchFn(beam.DoFn):
    def __init__(self, encoder: Encoder, encode_batch_size: int, threads: int = 0):
        self._encoder = encoder
        self._encode_batch_size = encode_batch_size
        self._threads = threads
        self._embedded = Metrics.counter("embed", "conversations_embedded")
        self._micros = Metrics.counter(STAGE_MICROS, "embed")

    def setup(self):
        if self._threads:
            embedding.set_threads(self._threads)
        embedding.load(self._encoder)  # a worker without the device fails here

    def process(self, facets: list[Facet]):
        started = time.perf_counter()
        outcomes = run_isolated(lambda batch: embedding.encode(self._encoder, [f.text for f in batch]), facets)
        seconds = time.perf_counter() - started
        self._micros.inc(int(seconds * 1e6))
        self._embedded.inc(len(facets))
        progress.advance("embed", len(facets), seconds)
        kept, vectors = [], []
        for facet, (vector, error) in zip(facets, outcomes):
            problem = error if error is not None else _vector_problem(vector)
            if problem is not None:
                yield stage_dead_letter(STAGE, "embedding_failed", facet.conversation_id, problem)
            else:
                kept.append(facet)
                vectors.append(vector)
        if kept:
            yield ConversationBlock(
                conversation_ids=[f.conversation_id for f in kept],
                user_ids=[f.user_id for f in kept],
                weights=np.array([f.weight for f in kept], dtype=np.float64),
                facets=[f.text for f in kept],
                embeddings=np.asarray(vectors, dtype=np.float32).reshape(len(kept), -1),
            )


class EmbedConversations(beam.PTransform):
    """Output: StageOutput of ConversationBlocks and the DeadLetters of texts that could not be embedded.
    `encoder`: the run's one encoder, which embeds every other text of the run too."""

    def __init__(self, encoder: Encoder, block_size: int = 512, encode_batch_size: int = 16, threads: int = 0):
        super().__init__()
        self._threads = threads
        self._encoder = encoder
        self._block_size = block_size
        self._encode_batch_size = encode_batch_size

    def expand(self, facets) -> StageOutput:
        mixed = (
            facets
            | "batch conversations into blocks" >> beam.BatchElements(
                min_batch_size=self._block_size, max_batch_size=self._block_size)
            | "embed each block" >> beam.ParDo(_EmbedBatchFn(self._encoder, self._encode_batch_size, self._threads))
        )
        return split_dead_letters(mixed)
