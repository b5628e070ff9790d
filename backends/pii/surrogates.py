"""Semantic pseudonyms (LOPSIDED): a made-up name of the same kind instead of "<PERSON_1>".

A found person name is replaced word by word: a given name by a given name of the same gender
(looked up in Faker's first-name lists of several locales; a name listed for both, or for neither,
gets a name from the unisex list), a surname by a surname, an initial by an initial. Within one
conversation a word always gets the same stand-in ("Daniel Okafor" -> "Aaron Smith", later "Mr.
Okafor" -> "Mr. Smith"), and no stand-in is a word that occurs in the conversation. The choice
depends on that conversation only: its names in the order they occur, the i-th new given name of a
gender getting the i-th unused name of a fixed, public list. Nothing is
carried from one conversation to the next (record independence).

The stand-ins come from Faker's en_US lists (MIT; requirements.txt): common names, so a model reads
them as people.
"""

from __future__ import annotations

import functools
import re

# Locales whose first-name lists decide a given name's gender (Latin script, broad coverage).
GENDER_LOCALES = ("en_US", "en_GB", "en_IN", "es_ES", "es_MX", "fr_FR", "de_DE", "it_IT", "pt_BR", "nl_NL",
                  "pl_PL", "tr_TR", "sw", "yo_NG", "zu_ZA", "id_ID", "fil_PH")
UNISEX = ("Alex", "Jordan", "Taylor", "Morgan", "Casey", "Riley", "Jamie", "Avery", "Quinn", "Rowan",
          "Reese", "Skyler", "Emerson", "Finley", "Hayden", "Parker", "Sawyer", "Dakota", "Harper", "Kendall")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_LETTERS = re.compile(r"[^\W\d_]+")


@functools.lru_cache(maxsize=1)
def _given_names_by_gender() -> tuple[frozenset[str], frozenset[str]]:
    """(female, male) lower-case given names of GENDER_LOCALES' Faker lists."""
    import importlib
    female, male = set(), set()
    for locale in GENDER_LOCALES:
        try:
            provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
        except ImportError:
            continue
        female.update(n.lower() for n in getattr(provider, "first_names_female", ()))
        male.update(n.lower() for n in getattr(provider, "first_names_male", ()))
    return frozenset(female), frozenset(male)


@functools.lru_cache(maxsize=1)
def given_names() -> frozenset[str]:
    """Lower-case common given names of several locales (the person judge's rules read them too)."""
    female, male = _given_names_by_gender()
    return female | male


@functools.lru_cache(maxsize=1)
def _lists() -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """(gender of a lower-case given name: "female"/"male", stand-in pools by slot)."""
    female, male = _given_names_by_gender()
    gender = {n: "female" for n in female - male} | {n: "male" for n in male - female}
    from faker.providers.person.en_US import Provider
    simple = re.compile(r"^[A-Z][a-z]{2,}$")  # one plain word: no "Mary-Jo", no initials

    def pool(names) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for n in names if simple.match(n)))

    return gender, {"female": pool(n for n in Provider.first_names_female if gender.get(n.lower()) == "female"),
                    "male": pool(n for n in Provider.first_names_male if gender.get(n.lower()) == "male"),
                    "unisex": UNISEX, "surname": pool(Provider.last_names)}


def _in_case_of(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    return word.lower() if like.islower() else word


class ConversationSurrogates:
    """Stand-in names for one conversation: surrogate(name) -> the name with each word replaced.

    `names`: the conversation's person names in the order they occur. Stand-ins are handed out in
    that order (the anonymizer replaces from the end of a text), and a word that follows another
    word of a name anywhere in the conversation is a surname, also where it stands alone ("Daniel
    Okafor ... Mr. Okafor")."""

    def __init__(self, texts: list[str], names: list[str] = ()):
        self._gender, self._pools = _lists()
        # never a word of the conversation ("Alex1"), nor the letters of one ("Alex" of "Alex1")
        self._taken = {w.lower() for text in [*texts, *names] for pattern in (_WORD, _LETTERS)
                       for w in pattern.findall(text or "")}
        self._surnames = {w.lower() for name in names for w in _WORD.findall(name)[1:]}
        self._by_word: dict[str, str] = {}
        self._next = {slot: 0 for slot in self._pools}
        for name in names:
            self.surrogate(name)

    def _slot(self, word: str, position: int) -> str:
        if word.lower() in self._surnames or position > 0:
            return "surname"
        # a given name of a known gender; else (a nickname, a name of the lists' blind spots) a unisex one
        return self._gender.get(word.lower(), "unisex")

    def _new(self, slot: str) -> str:
        pool = self._pools[slot]
        while True:
            i = self._next[slot]
            self._next[slot] += 1
            # past the list (a conversation with hundreds of people): numbered stand-ins
            name = pool[i] if i < len(pool) else f"{pool[0]}{i - len(pool) + 1}"
            if name.lower() not in self._taken:
                self._taken.add(name.lower())
                return name

    def surrogate(self, name: str) -> str:
        out, last = [], 0
        for i, match in enumerate(_WORD.finditer(name)):
            word = match.group()
            key = word.lower()
            if key not in self._by_word:
                stand_in = self._new(self._slot(word, i))
                # an initial stays an initial ("J. R. Tolkien" -> "A. B. Smith")
                self._by_word[key] = stand_in[0] if len(word) == 1 else stand_in
            out.append(name[last:match.start()] + _in_case_of(self._by_word[key], word))
            last = match.end()
        return "".join(out) + name[last:]
