"""Pseudonymization: a generated labelled set (pii_corpus) and the recall of each detector on it
(pii_recall, pii_detectors), hand labels of real prompts (pii_real), the hand-written examples
(pseudonymization), and what pseudonyms do to the LLM steps (pseudonym_agreement). The labelled
inputs are in eval/data/."""
