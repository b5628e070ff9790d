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
    def __init__(self, model_name: str, encode_batch_size: int, backend: str, threads: int = 0,
                 device: str = "cpu"):
        self._model_name = model_name
        self._device = device
        self._encode_batch_size = encode_batch_size
        self._backend = backend
        self._threads = threads
        self._embedded = Metrics.counter("embed", "conversations_embedded")
        self._micros = Metrics.counter(STAGE_MICROS, "embed")

    def setup(self):
        if self._threads:
            embedding.set_threads(self._threads)
        if self._backend == "torch":
            embedding.load_model(self._model_name, self._device)  # a worker without the device fails here
        else:
            embedding.load_onnx_model(self._model_name, self._backend)

    def process(self, facets: list[Facet]):
        started = time.perf_counter()
        outcomes = run_isolated(
            lambda batch: embedding.embed_texts(self._model_name, [f.text for f in batch], self._encode_batch_size,
                                                self._backend, self._device),
            facets)
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
    """Output: StageOutput of ConversationBlocks and the DeadLetters of texts that could not be embedded."""

    def __init__(self, model_name: str, block_size: int = 512, encode_batch_size: int = 16, backend: str = "torch",
                 threads: int = 0, device: str = "cpu"):
        super().__init__()
        self._device = device
        self._threads = threads
        self._model_name = model_name
        self._backend = backend
        self._block_size = block_size
        self._encode_batch_size = encode_batch_size

    def expand(self, facets) -> StageOutput:
        mixed = (
            facets
            | "batch conversations into blocks" >> beam.BatchElements(
                min_batch_size=self._block_size, max_batch_size=self._block_size)
            | "embed each block" >> beam.ParDo(_EmbedBatchFn(self._model_name, self._encode_batch_size, self._backend,
                                                        self._threads, self._device))
        )
        return split_dead_letters(mixed)
