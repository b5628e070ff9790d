"""ExtractFacets: each kept conversation -> its private facet text, via a FacetExtractor.

An extractor with batch_size > 1 (the LLM ones) gets batches, which it fans out over its thread
pool; the offline extractor is called per element, as before.
"""

from __future__ import annotations

import apache_beam as beam

from backends.interfaces import FacetExtractor
from transforms.records import Facet, WeightedConversation
from transforms.stage_timing import timed


class _ExtractFacetFn(beam.DoFn):
    def __init__(self, extractor: FacetExtractor):
        self._extractor = extractor
        self._timed_facet = timed("extract_facets", _facet)

    def setup(self):
        self._extractor.setup()

    def process(self, kept: WeightedConversation):
        yield self._timed_facet(self._extractor, kept)


def _facet(extractor: FacetExtractor, kept: WeightedConversation) -> Facet:
    conversation = kept.conversation
    return Facet(conversation.conversation_id, conversation.user_id, kept.weight, extractor.extract(conversation))


class _ExtractFacetBatchFn(beam.DoFn):
    def __init__(self, extractor: FacetExtractor):
        self._extractor = extractor
        self._timed_facets = timed("extract_facets", _facets)

    def setup(self):
        self._extractor.setup()

    def process(self, batch: list[WeightedConversation]):
        yield from self._timed_facets(self._extractor, batch)


def _facets(extractor: FacetExtractor, batch: list[WeightedConversation]) -> list[Facet]:
    texts = extractor.extract_batch([kept.conversation for kept in batch])
    return [Facet(k.conversation.conversation_id, k.conversation.user_id, k.weight, text)
            for k, text in zip(batch, texts)]


class ExtractFacets(beam.PTransform):
    def __init__(self, extractor: FacetExtractor):
        super().__init__()
        self._extractor = extractor

    def expand(self, kept_conversations):
        batch_size = getattr(self._extractor, "batch_size", 1)
        if batch_size <= 1:
            return kept_conversations | "extract facet text" >> beam.ParDo(_ExtractFacetFn(self._extractor))
        return (kept_conversations
                | "batch conversations" >> beam.BatchElements(min_batch_size=batch_size,
                                                                  max_batch_size=batch_size)
                | "extract facet text in batches" >> beam.ParDo(_ExtractFacetBatchFn(self._extractor)))
