"""The keyword-set builder's own stages (beam_jobs/build_keywords.py), which the insights job does not run.

KwSet-TFIDF: `tfidf_terms.py` (clipped and per-user term counts, each user's top TF-IDF terms) and
`dp_document_frequencies.py` (the Gaussian user-level document frequencies); KwSet-LLM:
`propose_keywords.py` (a KeywordProposer's keywords per conversation) and `nominate_terms.py` (each
user's L0 heaviest); both end in `dp_select_terms.py` (PipelineDP's partition selection). KwSet-Public:
`public_candidates.py`, which reads the public corpus only. The stages both jobs run (reading, bounding,
facets) are in transforms/.
"""
