"""The pseudonymizer with the real Presidio + spaCy (en_core_web_sm) engine, offline."""

import json

import pytest

from backends.llm.pseudonymize import shared_pseudonymizer
from eval.pseudonymization import DATA, evaluate

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pseudonymizer():
    return shared_pseudonymizer()


def test_same_value_same_pseudonym_across_a_conversations_turns(pseudonymizer):
    first, second = pseudonymizer.pseudonymize_texts([
        "I'm Daniel Okafor, mail me at d.okafor@brightmail.com or call 415-555-0198.",
        "Daniel Okafor again: did you get my mail at d.okafor@brightmail.com? My wife Sofia Rossi asks too."])
    assert "Daniel" not in first + second and "brightmail" not in first + second and "555" not in first
    person = first[first.index("<PERSON_"):first.index(">", first.index("<PERSON_")) + 1]
    email = first[first.index("<EMAIL_ADDRESS_"):first.index(">", first.index("<EMAIL_ADDRESS_")) + 1]
    assert second.startswith(person) and email in second and "<PHONE_NUMBER_1>" in first
    assert second.count("<PERSON_") == 2  # Sofia Rossi is a second, different person


def test_topic_bearing_entities_are_kept(pseudonymizer):
    text = "How do I move to Germany as a Rust developer? I'm Canadian and use Kubernetes on AWS from my MacBook."
    assert pseudonymizer.pseudonymize(text) == text


def test_urls_are_replaced_only_when_they_carry_an_identifier(pseudonymizer):
    out = pseudonymizer.pseudonymize("Is react.dev good? My order is https://shop.example.com/orders/88213?t=af9")
    assert "react.dev" in out and "88213" not in out and "<URL_1>" in out


def test_measured_recall_and_topic_damage_on_the_labelled_examples(pseudonymizer):
    examples = [json.loads(line) for line in open(DATA)]
    result = evaluate(pseudonymizer, examples)
    print(result["recall"], result["topic_entities_replaced"])
    # measured 34/36 and 3/45 (eval/pseudonymization.py); a drop means a regression
    assert result["recall"] >= 0.9 and result["topic_entities_replaced"] <= 5


def test_a_person_named_by_a_word_of_a_keyword_is_still_replaced(pseudonymizer):
    # "grant" is a word of a keyword ("grant proposal"), not a keyword.
    assert "grant proposal" in pseudonymizer.topic_terms and "grant" not in pseudonymizer.topic_terms
    out = pseudonymizer.pseudonymize("Please write a thank-you note to Grant Whitfield for his help with my thesis.")
    assert "Grant" not in out and "<PERSON_1>" in out
