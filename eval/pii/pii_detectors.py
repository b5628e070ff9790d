"""Candidate additions to the pseudonymizer's name detection, measured by eval/pii/pii_recall.py.

Each wraps a `Pseudonymizer.detect` and adds PERSON spans:
- `GazetteerDetector`: first and last names from the names-dataset package (names-dataset 3.3.1,
  MIT, first and last names by country): "First Last" pairs of listed names, and a listed first name
  after "to"/"for"/"with" or opening a sentence before "'s";
- `LLMSecondOpinion`: the local LLM (backends/llm/local_client.py) asked for the private people's
  names in the text, each found verbatim.
Neither is shipped; eval/pii/pii_recall.py prints what each buys and costs.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import re
import time

from backends.pii import name_rules

_CAPITALIZED = re.compile(r"(?<![\w-])[A-Z][^\W\d_]+(?:-[A-Z][^\W\d_]+)?(?![\w-])")


def load_names_dataset(max_rank: int = 1000) -> tuple[frozenset[str], frozenset[str], float]:
    """(first names, last names, seconds to load): names ranked within the top `max_rank` of some
    country. Loads the package's two pickles (about 2 GB of dicts while deriving the sets)."""
    import importlib.util
    started = time.perf_counter()
    # The pickles only: importing the package would also need pycountry, for nothing used here.
    spec = importlib.util.find_spec("names_dataset")
    if spec is None:
        raise ModuleNotFoundError("names-dataset is not installed (pip install names-dataset==3.3.1)")
    root = os.path.join(spec.submodule_search_locations[0], "v3")
    sets = []
    for kind in ("first", "last"):
        with gzip.open(os.path.join(root, f"{kind}_names.pkl.gz")) as handle:
            names = pickle.load(handle)
        sets.append(frozenset(n for n, v in names.items() if v["rank"] and min(v["rank"].values()) <= max_rank))
        del names
    return sets[0], sets[1], time.perf_counter() - started


class GazetteerDetector:
    def __init__(self, base, first_names: frozenset[str], last_names: frozenset[str]):
        self.base, self.first_names, self.last_names = base, first_names, last_names
        from spacy.lang.en.stop_words import STOP_WORDS
        self.excluded = frozenset(STOP_WORDS) | base.topic_terms | name_rules.NOT_NAMES

    def _listed(self, word: str, names: frozenset[str]) -> bool:
        return word in names and word.lower() not in self.excluded

    def detect(self, text: str) -> list[tuple[str, int, int]]:
        found = self.base.detect(text)
        words = list(_CAPITALIZED.finditer(text))
        spans = []
        for first, last in zip(words, words[1:]):
            if (text[first.end():last.start()] == " " and self._listed(first.group(), self.first_names)
                    and self._listed(last.group(), self.last_names)):
                spans.append((first.start(), last.end()))
        for word in words:
            cued = re.search(r"\b(?:to|for|with)\s+$", text[max(0, word.start() - 6):word.start()])
            opens_possessive = (re.search(r"(?:^|[.!?\n]\s*)$", text[:word.start()])
                                and text[word.end():word.end() + 2] in ("'s", "’s"))
            if (cued or opens_possessive) and self._listed(word.group(), self.first_names):
                spans.append((word.start(), word.end()))
        for start, end in spans:
            if any(s < end and start < e for _, s, e in found) or name_rules.is_public_mention(text, start, end) \
                    or name_rules.is_thing(text, start):
                continue
            found.append(("PERSON", start, end))
        return sorted(found)


PROMPT = ("List the names of private people (not famous public figures) that occur in the user's text, "
          "exactly as written. Do not list companies, products, places or famous people. "
          'Answer only with JSON: {"names": ["..."]}.')


class LLMSecondOpinion:
    def __init__(self, base, client, max_tokens: int = 64, timeout_s: float = 120.0):
        self.base, self.client, self.max_tokens, self.timeout_s = base, client, max_tokens, timeout_s
        self.failures = 0

    def detect(self, text: str) -> list[tuple[str, int, int]]:
        found = self.base.detect(text)
        messages = [{"role": "system", "content": PROMPT}, {"role": "user", "content": text}]
        try:
            answer = self.client.complete(messages, json_output=True, max_tokens=self.max_tokens,
                                          timeout_s=self.timeout_s)
            body = answer.text[answer.text.find("{"):answer.text.rfind("}") + 1]
            names = json.loads(body).get("names", [])
        except Exception:  # noqa: BLE001 - a failed call is counted and leaves the base detection
            self.failures += 1
            return found
        for name in names if isinstance(names, list) else []:
            if not isinstance(name, str) or len(name.strip()) < 2:
                continue
            for match in re.finditer(r"(?<![\w-])" + re.escape(name.strip()) + r"(?![\w-])", text):
                if not any(s < match.end() and match.start() < e for _, s, e in found):
                    found.append(("PERSON", match.start(), match.end()))
        return sorted(found)
