"""ExtractFacets: each kept conversation -> its private facet text, via a FacetExtractor.

An extractor with batch_size > 1 (the LLM ones) gets batches, which it fans out over its thread
pool; the offline extractor is called per element. A conversation whose extraction raises, or
gives no usable text, is dead-lettered alone (transforms/record_isolation.py).
"""

from __future__ import annotations

import apache_beam as beam

from backends.interfaces import FacetExtractor
from core.records import Facet, WeightedConversation
from transforms.record_isolation import StageOutput, run_isolated, split_dead_letters, stage_dead_letter
from transforms.stage_timing import timed
from transforms.validation import is_strict_utf8

STAGE = "facets"


def _facet_or_dead_letter(kept: WeightedConversation, text, error: Exception | None):
    conversation = kept.conversation
    if error is not None:
        return stage_dead_letter(STAGE, "facet_failed", conversation.conversation_id, error)
    if not isinstance(text, str) or not text.strip() or not is_strict_utf8(text):
        # An empty or unencodable facet would fail or skew the embedding of this record only.
        return stage_dead_letter(STAGE, "facet_failed", conversation.conversation_id,
                                 f"the extractor gave no usable text ({type(text).__name__})")
    return Facet(conversation.conversation_id, conversation.user_id, kept.weight, text)


def _facets(extractor: FacetExtractor, batch: list[WeightedConversation]) -> list:
    outcomes = run_isolated(lambda conversations: extractor.extract_batch(conversations),
                            [kept.conversation for kept in batch])
    return [_facet_or_dead_letter(kept, text, error) for kept, (text, error) in zip(batch, outcomes)]


class _ExtractFacetFn(beam.DoFn):
    def __init__(self, extractor: FacetExtractor):
        self._extractor = extractor
        self._timed_facets = timed("extract_facets", _facets)

    def setup(self):
        self._extractor.setup()

    def teardown(self):
        self._extractor.teardown()

    def process(self, kept: WeightedConversation):
        yield from self._timed_facets(self._extractor, [kept])


class _ExtractFacetBatchFn(_ExtractFacetFn):
    def process(self, batch: list[WeightedConversation]):
        yield from self._timed_facets(self._extractor, batch)


class ExtractFacets(beam.PTransform):
    """Output: StageOutput of Facets and the DeadLetters of conversations whose facet failed."""

    def __init__(self, extractor: FacetExtractor):
        super().__init__()
        self._extractor = extractor

    def expand(self, kept_conversations) -> StageOutput:
        batch_size = getattr(self._extractor, "batch_size", 1)
        if batch_size <= 1:
            mixed = kept_conversations | "extract facet text" >> beam.ParDo(_ExtractFacetFn(self._extractor))
        else:
            mixed = (kept_conversations
                     | "batch conversations" >> beam.BatchElements(min_batch_size=batch_size,
                                                                       max_batch_size=batch_size)
                     | "extract facet text in batches" >> beam.ParDo(_ExtractFacetBatchFn(self._extractor)))
        return split_dead_letters(mixed)
