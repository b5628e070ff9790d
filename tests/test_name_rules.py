"""The text-only parts of the name rules (backends/llm/name_rules.py); the token rules are tested
through the pseudonymizer in tests/test_pseudonymize.py."""

import pytest
from spacy.lang.en.stop_words import STOP_WORDS

from backends.llm.name_rules import extend_name, is_identifier, is_public_mention, is_thing


def _span(text, name):
    start = text.index(name)
    return start, start + len(name)


@pytest.mark.parametrize("text, name", [
    ("Write a poem in the style of Pablo Neruda.", "Pablo Neruda"),
    ("What were Serena Williams's main achievements?", "Serena Williams"),
    ("According to Noam Chomsky, what is language?", "Noam Chomsky"),
    ("who is shah rukh khan and why is he famous?", "shah rukh khan"),
    ("What would Ada Lovelace think about AI?", "Ada Lovelace"),
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
