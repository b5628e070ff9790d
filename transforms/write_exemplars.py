"""WriteExemplars: each released topic -> synthetic example requests evolved toward its DP centre.

Post-processing, no budget: the writer sees the topic's released name, description and keywords
only; the candidates are embedded with the job's public model and projected with the basis and
dimension the DP k-means used (both public or DP-derived), and ranked against the released centres
(backends/exemplars.py). Runs after naming, so the exemplars can follow the name the report shows.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from backends import embedding
from backends.exemplars import Evolution, evolve_exemplars
from backends.interfaces import ExemplarWriter
from config.embedding import Encoder
from dp_ops import dp_kmeans as mechanism
from transforms.engine import WithPrivate
from transforms.stage_timing import timed

COUNTER_NAMESPACE = "exemplars"


class _WriteExemplarsFn(beam.DoFn):
    def __init__(self, writer: ExemplarWriter, encoder: Encoder, count: int, candidates: int, rounds: int):
        self._writer = writer
        self._encoder = encoder
        self._count, self._candidates, self._rounds = count, candidates, rounds

    def setup(self):
        self._writer.setup()
        self._evolve = timed("exemplars", evolve_exemplars)

    def teardown(self):
        self._writer.teardown()

    def evolution(self, cluster_id: int, topic: dict, centres, basis, active_dim) -> Evolution:
        def points_of(texts: list[str]):
            vectors = embedding.encode(self._encoder, texts)
            return mechanism.project_points(vectors, basis, active_dim)

        return self._evolve(self._writer, topic, centres[cluster_id], points_of, self._count, self._candidates,
                            self._rounds)

    def process(self, named_topic, centres, basis, active_dim):
        cluster_id, topic = named_topic
        evolution = self.evolution(cluster_id, topic, centres, basis, active_dim)
        Metrics.counter(COUNTER_NAMESPACE, "candidates_scored").inc(evolution.candidates_scored)
        for reason, dropped in evolution.dropped.items():
            Metrics.counter(COUNTER_NAMESPACE, f"candidates_dropped_{reason}").inc(dropped)
        yield cluster_id, {**topic, "exemplars": [exemplar.to_json() for exemplar in evolution.exemplars]}


class WriteExemplars(beam.PTransform):
    """(cluster_id, named topic) -> the same with "exemplars": [{"text", "similarity_to_centre"}], at
    most `count` per topic. Side inputs: the singleton DP centres, and the basis and dimension DP
    k-means projected with (DPKMeansOutput). `encoder`: the run's, which embeds the candidates."""

    def __init__(self, writer: ExemplarWriter, encoder: Encoder, count: int, candidates: int, rounds: int,
                 centres, basis, active_dim):
        super().__init__()
        self._fn = _WriteExemplarsFn(writer, encoder, count, candidates, rounds)
        self._centres, self._basis, self._active_dim = centres, basis, active_dim

    def local(self, named_topics: dict) -> WithPrivate:
        """In-process: {cluster_id: named topic} -> the same with exemplars; each topic's Evolution is
        the private by-product "exemplar_evolutions" (for evaluation)."""
        self._fn.setup()
        try:
            evolutions = {cluster_id: self._fn.evolution(cluster_id, named_topics[cluster_id], self._centres,
                                                         self._basis, self._active_dim)
                          for cluster_id in sorted(named_topics)}
        finally:
            self._fn.teardown()
        topics = {cluster_id: {**topic, "exemplars": [e.to_json() for e in evolutions[cluster_id].exemplars]}
                  for cluster_id, topic in named_topics.items()}
        return WithPrivate(topics, {"exemplar_evolutions": evolutions})

    def expand(self, named_topics):
        return named_topics | "evolve exemplars toward each DP centre" >> beam.ParDo(
            self._fn, beam.pvalue.AsSingleton(self._centres), beam.pvalue.AsSingleton(self._basis),
            beam.pvalue.AsSingleton(self._active_dim))
