"""LLM backends for the pluggable steps (facets, keyword selection, naming, keyword-set building).

- `prompts.py`: URANIA's prompts; `parsing.py`: reading (and safely repairing) model answers.
- `openai_client.py`, `vertex_client.py`: one chat client per backend, same small interface
  (`client.py`), errors classified as retryable or not.
- `fanout.py`: bounded thread pool, retries with exponential backoff and jitter, the content-hash
  cache (`cache.py`) and per-call accounting that the steps turn into Beam counters (`metrics.py`).
- The PII guard that pseudonymizes conversation text before any of it reaches a prompt: backends/pii/.
- `steps.py`: LLMFacetExtractor, LLMKeywordSelector, LLMClusterNamer, LLMKeywordProposer,
  LLMKeywordSetRefiner, each falling back to the offline implementation for an element whose call failed.
"""
