"""The PII guard: personal data -> consistent pseudonyms before any conversation text reaches an LLM prompt.

- `pseudonymize.py`: the Pseudonymizer (Presidio's recognizers, spaCy NER, the rules and the model
  below), typed ("<PERSON_1>") or semantic pseudonyms, consistent within a conversation only.
- `name_rules.py` with its data in `name_rules_patterns.py`: the context rules for person names NER
  misses, and for public figures the request is about, who are kept.
- `name_model.py`: the small PII name model (Rampart, ONNX), for names without a cue.
- `person_judge.py`: the local model's public-or-private verdict on a name the rules would replace.
- `surrogates.py`: made-up names of the same kind for `--pseudonyms surrogate`.

The LLM clients and steps it protects are in backends/llm/.
"""
