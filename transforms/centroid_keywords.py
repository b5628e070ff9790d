"""CentroidKeywords: each kept DP k-means centre -> the keywords of K whose embeddings lie nearest.

Zero extra budget: the centres are already DP releases, K is public, the embedding model and
the basis (dp_ops/dp_kmeans.clustering_basis, seeded or from public keywords) are fixed before any
data is read and the dimension is public or derived from a DP count, so this is post-processing.
It is the one-shot noisy-mean idea of DP summarisation: decode one noisy aggregate instead of
spending budget per released word. Keywords are compared with the centres in the clustering space
(projected with the same basis and dimension and re-normalised like the conversations were),
where the centres live.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np

from config.embedding import Encoder
from dp_ops import dp_kmeans as mechanism
from transforms.stage_timing import timed
from transforms.vectors import keyword_vectors


def nearest_keywords(centres: np.ndarray, keyword_points: np.ndarray, keywords: tuple[str, ...],
                     top_t: int) -> list[list[str]]:
    """For every centre (row), the `top_t` keywords by cosine similarity (ties: K's order)."""
    similarities = centres @ keyword_points.T
    order = np.argsort(-similarities, axis=1, kind="stable")[:, :top_t]
    return [[keywords[j] for j in row] for row in order]


class _NearestKeywordsFn(beam.DoFn):
    def __init__(self, keywords: tuple[str, ...], encoder: Encoder, top_t: int):
        self._keywords = keywords
        self._encoder = encoder
        self._top_t = top_t
        self._vectors = None

    def setup(self):
        self._vectors = keyword_vectors(self._encoder, self._keywords)

    def process(self, centres, kept_cluster_ids, basis, active_dim):
        points = mechanism.project_points(self._vectors, basis, active_dim)
        chosen = timed("centroid_keywords", nearest_keywords)(centres, points, self._keywords, self._top_t)
        for cluster_id in sorted(kept_cluster_ids):
            yield int(cluster_id), chosen[cluster_id]


class CentroidKeywords(beam.PTransform):
    """Input: the singleton DP centres. Output: (cluster_id, [t keywords]) for each kept cluster.
    `basis` and `active_dim`: the singletons DP k-means projected with (DPKMeansOutput); `encoder`: the run's."""

    def __init__(self, keywords: tuple[str, ...], encoder: Encoder, top_t: int, kept_cluster_ids, basis, active_dim):
        super().__init__()
        self._fn = _NearestKeywordsFn(tuple(keywords), encoder, top_t)
        self._kept_cluster_ids = kept_cluster_ids
        self._basis, self._active_dim = basis, active_dim

    def local(self, centres: np.ndarray) -> dict:
        """In-process (transforms/engine.py): {cluster_id: its keywords} for the kept clusters."""
        self._fn.setup()
        return dict(self._fn.process(centres, self._kept_cluster_ids, self._basis, self._active_dim))

    def expand(self, centres):
        return centres | "nearest keywords per kept centre" >> beam.ParDo(
            self._fn, beam.pvalue.AsList(self._kept_cluster_ids), beam.pvalue.AsSingleton(self._basis),
            beam.pvalue.AsSingleton(self._active_dim))
