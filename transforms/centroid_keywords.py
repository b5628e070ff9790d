"""CentroidKeywords: each kept DP k-means centre -> the keywords of K whose embeddings lie nearest.

Zero extra budget: the centres are already DP releases, K is public and the embedding model and
the projection (dp_ops/dp_kmeans.projection_matrix, seeded and data-independent) are fixed before
any data is read, so this is post-processing. It is the one-shot noisy-mean idea of DP
summarisation: decode one noisy aggregate instead of spending budget per released word. Keywords
are compared with the centres in the clustering space (projected and re-normalised like the
conversations were), where the centres live.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np

from backends import embedding
from dp_ops import dp_kmeans as mechanism
from transforms.stage_timing import timed


def nearest_keywords(centres: np.ndarray, keyword_points: np.ndarray, keywords: tuple[str, ...],
                     top_t: int) -> list[list[str]]:
    """For every centre (row), the `top_t` keywords by cosine similarity (ties: K's order)."""
    similarities = centres @ keyword_points.T
    order = np.argsort(-similarities, axis=1, kind="stable")[:, :top_t]
    return [[keywords[j] for j in row] for row in order]


class _NearestKeywordsFn(beam.DoFn):
    def __init__(self, keywords: tuple[str, ...], model_name: str, params: mechanism.DPKMeansParams, top_t: int):
        self._keywords = keywords
        self._model_name = model_name
        self._params = params
        self._top_t = top_t
        self._points = None

    def setup(self):
        vectors = embedding.embed_texts(self._model_name, list(self._keywords))
        self._points = mechanism.project_points(vectors, mechanism.projection_matrix(self._params))

    def process(self, centres, kept_cluster_ids):
        chosen = timed("centroid_keywords", nearest_keywords)(centres, self._points, self._keywords, self._top_t)
        for cluster_id in sorted(kept_cluster_ids):
            yield int(cluster_id), chosen[cluster_id]


class CentroidKeywords(beam.PTransform):
    """Input: the singleton DP centres. Output: (cluster_id, [t keywords]) for each kept cluster."""

    def __init__(self, keywords: tuple[str, ...], model_name: str, params: mechanism.DPKMeansParams, top_t: int,
                 kept_cluster_ids):
        super().__init__()
        self._fn = _NearestKeywordsFn(tuple(keywords), model_name, params, top_t)
        self._kept_cluster_ids = kept_cluster_ids

    def expand(self, centres):
        return centres | "nearest keywords per kept centre" >> beam.ParDo(
            self._fn, beam.pvalue.AsList(self._kept_cluster_ids))
