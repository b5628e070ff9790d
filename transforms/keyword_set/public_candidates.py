"""PublicKeywordCandidates: a public corpus file -> its most widespread keyword candidates.

Counts in how many documents each candidate occurs and keeps those in at least `min_documents`,
most widespread first, at most `max_candidates`. Reads only the public corpus.
"""

from __future__ import annotations

import apache_beam as beam

from backends.public_candidates import PublicCandidateExtractor, public_document_text
from transforms.stage_timing import timed


class _ExtractFn(beam.DoFn):
    def __init__(self, extractor: PublicCandidateExtractor):
        self._extractor = extractor

    def setup(self):
        self._extractor.setup()

    def process(self, text: str):
        yield from self._extractor.extract(text)


def ranked_candidates(counts: list[tuple[str, int]], min_documents: int, max_candidates: int) -> list[str]:
    kept = sorted(((-n, c) for c, n in counts if n >= min_documents))
    return [c for _, c in kept[:max_candidates]]


class PublicKeywordCandidates(beam.PTransform):
    """Output: a singleton list of candidates, most widespread first."""

    def __init__(self, corpus_pattern: str, min_documents: int = 2, max_candidates: int = 1000):
        super().__init__()
        self._corpus_pattern = corpus_pattern
        self._min_documents = min_documents
        self._max_candidates = max_candidates

    def expand(self, pbegin):
        return (pbegin
                | "read public corpus" >> beam.io.ReadFromText(self._corpus_pattern)
                | "document text" >> beam.Map(public_document_text)
                | "non-empty documents" >> beam.Filter(bool)
                | "extract candidates" >> beam.ParDo(_ExtractFn(PublicCandidateExtractor()))
                | "documents per candidate" >> beam.combiners.Count.PerElement()
                | "all candidates" >> beam.combiners.ToList()
                | "rank candidates" >> beam.Map(timed("public_candidates", ranked_candidates),
                                                self._min_documents, self._max_candidates))
