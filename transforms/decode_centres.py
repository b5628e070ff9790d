"""DecodeCentres (--centre_decoder): each released topic's DP centre decoded into a name and a one-sentence
description by search (backends/centre_decoder.py), then every name made distinct again.

Post-processing, no budget: the writer sees the topic's released labels only, the bank is public, and
the candidates are embedded with the job's public model and projected with the basis and dimension the
DP k-means used, then ranked against the released centres (side inputs, as for the exemplars). Each
topic is decoded on its own: one whose search fails keeps the name its labels gave, and no other topic
changes for it (only the distinct-names step, which has always looked at all names, sees them together).
Runs after naming and before the hierarchy and the exemplars, which then read the decoded names.

Every candidate and every join passes the readability gate (backends/readable_names.py: a short noun phrase in one
script, no question, no fragment, no parts far apart in meaning) before it is scored, and a decoded name replaces
the name the topic's labels gave ("(approximate)", "Mixed: ..." or a vote name) only when it is nearer the
topic's DP centre than that name; otherwise the topic keeps it (counted as labels_name_nearer).
"""

from __future__ import annotations

import dataclasses
import logging

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from backends import embedding
from backends.centre_decoder import (
    DRAFTS,
    ROUNDS,
    Composition,
    DecodedLabel,
    NameBank,
    SensitiveGate,
    WithBank,
    decode_centre,
    decoded_topic,
    labels_name,
)
from backends.interfaces import ExemplarWriter
from backends.keyword_categories import KeywordCategories
from backends.readable_names import NameGate
from config.embedding import Encoder
from dp_ops import dp_kmeans as mechanism
from dp_ops.theme_histogram import ThemeRule, nearest_theme, theme_columns
from transforms.distinct_names import DistinctNamesFn
from transforms.engine import WithPrivate
from transforms.stage_timing import timed
from transforms.vectors import keyword_vectors

COUNTER_NAMESPACE = "centre_decoder"
log = logging.getLogger("urania.centre_decoder")


@dataclasses.dataclass(frozen=True)
class DecoderSettings:
    """--centre_decoder: the label writer, the public bank and the search's size. `first_draft`: evaluation
    only, also compose the name round 0's candidates give (DecodedLabel.first_draft_similarity), which a
    release never reads."""

    writer: ExemplarWriter
    bank: NameBank
    drafts: int = DRAFTS
    rounds: int = ROUNDS
    first_draft: bool = False


class _DecodeCentreFn(beam.DoFn):
    def __init__(self, settings: DecoderSettings, encoder: Encoder, keywords: tuple[str, ...],
                 categories: KeywordCategories):
        self._settings, self._encoder = settings, encoder
        self._keywords, self._categories = tuple(keywords), categories

    def setup(self):
        settings = self._settings
        settings.writer.setup()
        self._categories.setup()
        category_of, sensitive = self._categories.category_of, self._categories.sensitive
        self._columns = theme_columns(self._categories.names)
        self._rule = ThemeRule.of(keyword_vectors(self._encoder, self._keywords), self._keywords, category_of,
                                  self._columns[:-1], min_similarity=self._encoder.floors.theme)
        # Texts -> embeddings and categories, per worker: the bank's labels are offered to every topic,
        # and are embedded and classified once.
        self._vectors: dict[str, np.ndarray] = {}
        self._category: dict[str, str | None] = {}
        self._gate = SensitiveGate(self._categories_of, category_of, sensitive)
        self._writer = WithBank(settings.writer,
                                lambda topic: settings.bank.offered(self._gate.supported(topic), sensitive))
        self._decode = timed("centre_decoder", decode_centre)
        # The readability gate (backends/readable_names.py) shares this worker's embeddings of texts.
        self._readable = NameGate(self._encoder, self._categories, embed=self._embedded)
        self._readable.setup()
        self._composition = Composition(readable=self._readable.problem, first_draft=settings.first_draft)

    def teardown(self):
        self._settings.writer.teardown()

    def _embedded(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            vectors = embedding.encode(self._encoder, missing)
            self._vectors.update(zip(missing, np.asarray(vectors, dtype=np.float32)))
        return np.stack([self._vectors[t] for t in texts])

    def _categories_of(self, texts: list[str]) -> list[str | None]:
        """Each text's category by the themes' public rule (its nearest keywords' category; None: Other)."""
        other = len(self._columns) - 1
        missing = [t for t in dict.fromkeys(texts) if t not in self._category]
        if missing:
            themes = [nearest_theme(vector, self._rule) for vector in self._embedded(missing)]
            self._category.update((t, None if theme == other else self._columns[theme])
                                  for t, theme in zip(missing, themes))
        return [self._category[t] for t in texts]

    def decoded(self, cluster_id: int, topic: dict, centres, basis, active_dim) -> tuple[dict, DecodedLabel | None]:
        """The topic with its decoded name, or as it was (no usable candidate, or a failure: logged,
        counted, and this topic alone keeps its labels' name)."""
        def points_of(texts: list[str]):
            return mechanism.project_points(self._embedded(texts), basis, active_dim)

        try:
            decoded = self._decode(self._writer, topic, centres[cluster_id], points_of, self._gate,
                                   self._settings.drafts, self._settings.rounds, self._composition)
            if decoded is not None:
                decoded = dataclasses.replace(decoded, labels_similarity=_similarity(
                    labels_name(topic), centres[cluster_id], points_of))
        except Exception as error:  # one topic's failure must not fail the run or touch another topic
            Metrics.counter(COUNTER_NAMESPACE, "failed").inc()
            log.warning("centre decoding failed: the topic keeps its name",
                        extra={"event": "centre_decoding_failed", "cluster_id": int(cluster_id),
                               "error": type(error).__name__})
            return topic, None
        if decoded is None:
            Metrics.counter(COUNTER_NAMESPACE, "not_decoded").inc()
            return topic, None
        Metrics.counter(COUNTER_NAMESPACE, "candidates_scored").inc(decoded.candidates_scored)
        for reason, dropped in decoded.dropped.items():
            Metrics.counter(COUNTER_NAMESPACE, f"candidates_dropped_{reason}").inc(dropped)
        if not decoded.replaces_labels:  # the labels' own name is nearer the centre: it stays
            Metrics.counter(COUNTER_NAMESPACE, "labels_name_nearer").inc()
            return topic, decoded
        Metrics.counter(COUNTER_NAMESPACE, "decoded").inc()
        return decoded_topic(topic, decoded), decoded

    def process(self, named_topic, centres, basis, active_dim):
        cluster_id, topic = named_topic
        yield cluster_id, self.decoded(cluster_id, topic, centres, basis, active_dim)[0]


def _similarity(name: str | None, centre: np.ndarray, points_of) -> float | None:
    """The cosine of `name` (projected as the candidates are) with the centre; None for no name."""
    if name is None:
        return None
    norm = float(np.linalg.norm(centre))
    return float(points_of([name])[0] @ (np.asarray(centre, dtype=np.float32) / norm)) if norm > 0 else None


class DecodeCentres(beam.PTransform):
    """(cluster_id, named topic) -> the same with a decoded name and description where the search found
    one (`name_evidence`: dp_centre_decoded, `name_from_labels`, `centre_similarity`), names distinct.
    Side inputs: the singleton DP centres, and the basis and dimension DP k-means projected with. `encoder`:
    the run's, which embeds the candidates and the keywords of the themes' rule that gates them."""

    def __init__(self, settings: DecoderSettings, encoder: Encoder, keywords: tuple[str, ...],
                 categories: KeywordCategories, centres, basis, active_dim):
        super().__init__()
        self._fn = _DecodeCentreFn(settings, encoder, keywords, categories)
        self._categories = categories
        self._centres, self._basis, self._active_dim = centres, basis, active_dim

    def local(self, named_topics: dict) -> WithPrivate:
        """In-process: {cluster_id: named topic} -> the same, decoded; each topic's DecodedLabel (None:
        kept its name) is the private by-product "centre_decodings" (for evaluation)."""
        self._fn.setup()
        try:
            results = {cluster_id: self._fn.decoded(cluster_id, named_topics[cluster_id], self._centres,
                                                    self._basis, self._active_dim)
                       for cluster_id in sorted(named_topics)}
        finally:
            self._fn.teardown()
        distinct = DistinctNamesFn(self._categories)
        distinct.setup()
        topics = dict(distinct.process([(cluster_id, topic) for cluster_id, (topic, _) in results.items()]))
        return WithPrivate(topics, {"centre_decodings": {c: decoded for c, (_, decoded) in results.items()}})

    def expand(self, named_topics):
        return (named_topics
                | "decode each DP centre" >> beam.ParDo(
                    self._fn, beam.pvalue.AsSingleton(self._centres), beam.pvalue.AsSingleton(self._basis),
                    beam.pvalue.AsSingleton(self._active_dim))
                | "all decoded names" >> beam.combiners.ToList()
                | "make decoded names distinct" >> beam.ParDo(DistinctNamesFn(self._categories)))
