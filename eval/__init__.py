"""Privacy audits and utility evaluation (issue 4), by subject:

- eval.audit: privacy audits (CanaryBench leakage, membership inference, the nightly privacy modes);
- eval.utility: topic utility (topic quality, names and labels, exemplars, the SIMPLE-CLIO baseline,
  URANIA's utility metrics, the privacy-utility sweep, the nightly stream);
- eval.pii: pseudonymization (the labelled sets, recall, detectors, what pseudonyms do to the LLM steps).

Shared by all three, here: data.py (data sets, facets and cached embeddings), tables.py (table and
number formatting) and urania_inprocess.py (the job's mechanisms in-process). eval/data/ holds
hand-labelled inputs; eval/results/ (git-ignored) the outputs and the embedding cache.

Everything here is for evaluation only: the baseline is NOT differentially private.
"""
