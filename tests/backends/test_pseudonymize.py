"""The pseudonymizer with the real Presidio + spaCy (en_core_web_sm) engine, offline."""

import json

import pytest

from backends.pii.pseudonymize import shared_pseudonymizer
from eval.pii.pseudonymization import DATA, evaluate

pytestmark = pytest.mark.real_model


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
    # measured 35/36 and 1/45 (eval/pii/pseudonymization.py); a drop means a regression
    assert result["recall"] >= 0.9 and result["topic_entities_replaced"] <= 5


def test_a_person_named_by_a_word_of_a_keyword_is_still_replaced(pseudonymizer):
    # "grant" is a word of a keyword ("grant proposal"), not a keyword.
    assert "grant proposal" in pseudonymizer.topic_terms and "grant" not in pseudonymizer.topic_terms
    out = pseudonymizer.pseudonymize("Please write a thank-you note to Grant Whitfield for his help with my thesis.")
    assert "Grant" not in out and "<PERSON_1>" in out


@pytest.mark.parametrize("text, names", [
    ("Dear Rose,\n\nThanks for the slides.\n\nBest,\nGrant Whitfield", ["Rose", "Grant Whitfield"]),
    ("my colleague bill asked me to fix his excel macro", ["bill"]),
    ("Hi Summer, can you review the deck before Friday?", ["Summer"]),
    ("Dr. Okonkwo prescribed metformin, is that safe with ibuprofen?", ["Okonkwo"]),
    # spaCy keeps the title's period ("Mr." one token): the title is still a private cue
    ("Mr. Okafor said hi. Later Daniel Okafor wrote again.", ["Daniel Okafor"]),
    # "X said", "X wrote" frame private people as often as public figures' words: not kept
    ("Sarah said she'd be late again, how do I reply politely?", ["Sarah"]),
    ("Later Daniel Okafor wrote again about the refund.", ["Daniel Okafor"]),
    ("My name is Adaeze Nwachukwu and I need a cover letter.", ["Adaeze Nwachukwu"]),
    ("Write a birthday message for Kipepeo, she turns 30.", ["Kipepeo"]),
    ("Please tell Wojciech that the build is fixed.", ["Wojciech"]),
    ("Here is my CV:\nIkrimah Szlaga\nData engineer, 5 years of SQL.", ["Ikrimah Szlaga"]),
    ("Customer Luce Nkonyeni (luce.nkonyeni@example.com) cannot log in.", ["Luce Nkonyeni"]),
])
def test_names_after_private_cues_are_replaced(pseudonymizer, text, names):
    out = pseudonymizer.pseudonymize(text)
    for name in names:
        for word in name.split():
            assert word not in out, (name, out)


@pytest.mark.parametrize("text", [
    "Hi team, my boss wants the Python report by Friday.",
    "Write a short poem in the style of Pablo Neruda about the sea.",
    "What did Marie Curie discover, and why does it matter for medicine in France?",
    "Can you explain the Zoom migration steps for our Jira board?",
    "I'm tired of my manager. How do I move to Germany as a Rust developer?",
    "Fix this:\n- Use a queue\n- Add logging\nclass SimulationTimer:\n    def run(self):\n        print(self.data)",
    "Write a Python Script with Error Handling for our Patient Information form.",
])
def test_cue_words_public_figures_and_products_are_left_alone(pseudonymizer, text):
    assert pseudonymizer.pseudonymize(text) == text


def test_header_names_keep_their_first_word_and_stop_at_the_line_break(pseudonymizer):
    # "Pat" and "Bill" are English words after "From:"/"To:"; spaCy's span ran on into "Subject"
    out = pseudonymizer.pseudonymize("From: Pat Ali <pali@proton.me>\nTo: Bill Aubert\nSubject: Q3 budget")
    assert out == "From: <PERSON_2> <<EMAIL_ADDRESS_1>>\nTo: <PERSON_1>\nSubject: Q3 budget"


def test_a_lower_case_name_grows_only_over_name_like_words_in_a_lower_case_text(pseudonymizer):
    # spaCy finds "wei"; "june" joins it, "arrived" (an inflected English word) does not
    out = pseudonymizer.pseudonymize("hello chinyere, the package for june wei arrived at the chicago office.")
    assert out == "hello <PERSON_2>, the package for <PERSON_1> arrived at the chicago office."


def test_a_pipeline_without_a_lemmatizer_uses_the_packaged_word_list(pseudonymizer):
    import spacy

    from backends.pii.pseudonymize import english_words
    assert english_words(spacy.blank("en")) == pseudonymizer._english_words


def test_a_private_cue_wins_over_a_public_context(pseudonymizer):
    out = pseudonymizer.pseudonymize("Explain to my colleague Marie Dubois the theories of Sigmund Freud.")
    assert "Dubois" not in out and "Sigmund Freud" in out


def test_a_name_found_once_is_replaced_wherever_it_recurs_in_the_conversation(pseudonymizer):
    first, second = pseudonymizer.pseudonymize_texts(["Dear Hope, the slides are attached.",
                                                      "Also, Hope asked whether Hope's budget is final."])
    assert "Hope" not in first + second and second.count("<PERSON_1>") == 2 and first.startswith("Dear <PERSON_1>")


def test_nothing_found_in_one_conversation_changes_another(pseudonymizer):
    # Record independence: a name learned from one conversation is not carried to the next.
    other = "Hope this helps: how should I water roses in summer?"
    alone = pseudonymizer.pseudonymize(other)
    pseudonymizer.pseudonymize_texts(["Dear Hope, happy birthday!", "Hope's party is on Friday."])
    assert pseudonymizer.pseudonymize(other) == alone == other


def test_held_out_recall_and_keep_intact_on_the_generated_set(pseudonymizer):
    from backends.pii.pseudonymize import Pseudonymizer
    from eval.pii.pii_corpus import generate
    from eval.pii.pii_recall import evaluate_spans
    examples = generate("heldout", 600)  # the split docs/llm_backends.md reports
    new = evaluate_spans(pseudonymizer.detect, examples)
    old = evaluate_spans(Pseudonymizer(name_rules=False, name_model=False).detect, examples[:150])
    names, keep = new["per_kind"]["PERSON"], new["keep"]
    old_names = old["per_kind"]["PERSON"]
    print(names, keep, old_names, old["keep"])
    # Measured: 682/700 names replaced and 428/475 keep entities intact (issue 18 asks 95% and 90%);
    # spaCy alone (the detector before the name rules and the name model) replaced 99/178 names of
    # the first 150 texts.
    assert names[0] / names[1] >= 0.95 and keep[0] / keep[1] >= 0.9
    assert old_names[0] / old_names[1] < 0.85


@pytest.mark.parametrize("text, name", [
    ("Page keeps disrupting class and Apolonia is always late. How do I handle it?", "Apolonia"),
    ("customer reed safitri (account email reed70@mail.co.uk) reports that tableau crashes on startup.", "safitri"),
])
def test_names_only_the_name_model_finds_are_replaced(pseudonymizer, text, name):
    from backends.pii.pseudonymize import Pseudonymizer
    assert name in Pseudonymizer(name_model=False).pseudonymize(text)  # no cue the rules read
    assert name not in pseudonymizer.pseudonymize(text)


def test_names_one_per_line_are_each_replaced(pseudonymizer):
    out = pseudonymizer.pseudonymize("Seating plan\nApolonia\nZaneta\nNgozi")
    assert out.split("\n")[1:] == ["<PERSON_3>", "<PERSON_2>", "<PERSON_1>"]


@pytest.mark.parametrize("text, kept, replaced", [
    # the model calls "async" and "sixteen" names; in a text typed with capitals they are not
    ("How do I center a div in React? Can you show the same thing with async await?", ["async"], []),
    ("Write a poem about a lost robot and keep it under sixteen lines.", ["sixteen"], []),
    # ... nor an English place word spaCy tags as a place ("Sydney" GPE), in a list of people
    ("Convert this to a table: Janet Idris, +1 215-786-8608; Autumn Foucher, Sydney.", ["Sydney"],
     ["Janet", "Idris", "Autumn", "Foucher"]),
])
def test_the_name_models_lower_case_words_and_tagged_places_are_kept(pseudonymizer, text, kept, replaced):
    out = pseudonymizer.pseudonymize(text)
    assert all(word in out for word in kept) and not any(word in out for word in replaced), out


def test_a_public_role_outweighs_a_private_cue_elsewhere_in_the_conversation(pseudonymizer):
    # The reply's "Mr. Voss" is a title cue (replaced there); where the request gives him a public
    # role, the public figure the request is about stays.
    first, second = pseudonymizer.pseudonymize_texts([
        "I need the office address for Harlan Voss, the CEO of Brightwater Capital.",
        "Mr. Voss works from the Brightwater Capital head office."])
    assert "Harlan Voss, the CEO" in first and "Voss" not in second


def test_a_public_title_in_the_name_models_span_is_no_part_of_the_name(pseudonymizer):
    # The model's span "singer Marisa Okafor" and spaCy's "President Hollis Brandvold" lose the title,
    # which then frames a public figure.
    for text in ("Can you provide me the fan mail address for singer Marisa Okafor?",
                 "Why did President Hollis Brandvold veto the bill?"):
        assert pseudonymizer.pseudonymize(text) == text
