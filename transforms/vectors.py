"""The vectors several stages compute alike: the public keywords' embeddings by the run's encoder
(`keyword_vectors`: the centroid keywords, the centre decoder, the theme rule and seeds, the facets) and a
block's points in the clustering space (`project_block`: DP k-means and the assignment, which project the
same blocks with the same basis and dimension)."""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from backends import embedding
from config.embedding import Encoder
from core.blas_threads import one_blas_thread
from core.records import ConversationBlock
from dp_ops import dp_kmeans as mechanism


def keyword_vectors(encoder: Encoder, keywords: Sequence[str]) -> np.ndarray:
    """K's embeddings by the run's encoder, each keyword embedded once per process (encode_public): the in-process
    evaluation ranks K for hundreds of runs."""
    return embedding.encode_public(encoder, keywords)


def project_block(block: ConversationBlock, projection: np.ndarray | None, active_dim: int) -> ConversationBlock:
    # One BLAS thread: a block is a few hundred rows, too small to gain from threads, and a worker
    # already runs one process or bundle per core. With the BLAS default (a thread per core) each
    # small product waits for busy cores: 16-20x slower on the 2-vCPU bench machine when anything
    # else runs (bench/bench_dp_kmeans.py, README "Performance"). Same arithmetic, same points.
    with one_blas_thread():
        points = mechanism.project_points(block.embeddings, projection, active_dim)
    return dataclasses.replace(block, points=points)
