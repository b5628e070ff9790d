"""ExtractFacets: each kept conversation -> its private facet text, via a FacetExtractor."""

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


class ExtractFacets(beam.PTransform):
    def __init__(self, extractor: FacetExtractor):
        super().__init__()
        self._extractor = extractor

    def expand(self, kept_conversations):
        return kept_conversations | "extract facet text" >> beam.ParDo(_ExtractFacetFn(self._extractor))
