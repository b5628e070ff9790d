"""ExtractFacets: each kept conversation -> its private facet text, via a FacetExtractor."""

from __future__ import annotations

import apache_beam as beam

from backends.interfaces import FacetExtractor
from transforms.records import Facet, WeightedConversation


class _ExtractFacetFn(beam.DoFn):
    def __init__(self, extractor: FacetExtractor):
        self._extractor = extractor

    def setup(self):
        self._extractor.setup()

    def process(self, kept: WeightedConversation):
        conversation = kept.conversation
        yield Facet(conversation.conversation_id, conversation.user_id, kept.weight,
                    self._extractor.extract(conversation))


class ExtractFacets(beam.PTransform):
    def __init__(self, extractor: FacetExtractor):
        super().__init__()
        self._extractor = extractor

    def expand(self, kept_conversations):
        return kept_conversations | "extract facet text" >> beam.ParDo(_ExtractFacetFn(self._extractor))
