"""Semantic pseudonyms (backends/pii/surrogates.py): same gender, consistent within a conversation,
independent across conversations."""

import pytest

from backends.pii.surrogates import UNISEX, ConversationSurrogates, _lists


def test_a_word_keeps_its_stand_in_through_the_conversation():
    names = ConversationSurrogates(["I'm Daniel Okafor.", "Mr. Okafor again; Daniel says hi."])
    full, surname, first = names.surrogate("Daniel Okafor"), names.surrogate("Okafor"), names.surrogate("Daniel")
    assert full == f"{first} {surname}" and full != "Daniel Okafor"
    assert names.surrogate("Daniel Okafor") == full


def test_given_names_keep_their_gender_and_unknown_ones_get_a_unisex_name():
    gender, pools = _lists()
    assert gender["mary"] == "female" and gender["james"] == "male"
    names = ConversationSurrogates(["Mary, James and Chibuzo Zulu"])
    assert names.surrogate("Mary").lower() in {n.lower() for n in pools["female"]}
    assert names.surrogate("James").lower() in {n.lower() for n in pools["male"]}
    assert names.surrogate("Chibuzo") in UNISEX
    assert names.surrogate("Zulu Chibuzo").split()[1] == names.surrogate("Chibuzo")  # the word's stand-in


def test_a_stand_in_is_never_a_word_of_the_conversation_and_never_shared():
    _, pools = _lists()
    first_male = pools["male"][0]
    names = ConversationSurrogates([f"James wrote to {first_male}."])
    stand_ins = [names.surrogate(n) for n in ("James", "Robert", "John")]
    assert first_male not in stand_ins and len(set(stand_ins)) == 3


@pytest.mark.parametrize("name, check", [("mary smith", str.islower), ("MARY SMITH", str.isupper),
                                         ("Mary Smith", str.istitle)])
def test_a_stand_in_is_written_in_the_names_case(name, check):
    assert check(ConversationSurrogates([name]).surrogate(name))


def test_more_people_than_the_list_get_numbered_stand_ins_not_in_the_conversation():
    names = ConversationSurrogates([f"{UNISEX[0]}2 is a handle"])
    stand_ins = [names.surrogate(f"Zq{chr(97 + i // 26)}{chr(97 + i % 26)}") for i in range(len(UNISEX) + 5)]
    assert len(set(stand_ins)) == len(stand_ins)
    assert stand_ins[0] == UNISEX[1]  # UNISEX[0] is a word of the conversation ("Alex2")
    assert stand_ins[len(UNISEX) - 1:] == [f"{UNISEX[0]}{i}" for i in (1, 3, 4, 5, 6, 7)]


def test_a_lone_surname_gets_the_surname_it_has_in_the_full_name_whatever_the_order():
    # Presidio replaces from the end of a text: the lone "Okafor" is asked for first
    names = ConversationSurrogates(["Mr. Okafor is Daniel Okafor."], names=["Okafor", "Daniel Okafor"])
    _, pools = _lists()
    assert names.surrogate("Okafor") in pools["surname"]
    assert names.surrogate("Daniel Okafor") == f"{names.surrogate('Daniel')} {names.surrogate('Okafor')}"


def test_an_initial_stays_an_initial_and_a_stand_in_is_never_the_names_own_word():
    names = ConversationSurrogates(["Alex1 and J. R. Tolkien"], names=["Alex", "J. R. Tolkien"])
    assert names.surrogate("Alex") != "Alex"
    first, second, surname = names.surrogate("J. R. Tolkien").split()
    assert len(first) == len(second) == 2 and first.endswith(".") and surname != "Tolkien"


def test_each_conversation_gets_its_stand_ins_alone():
    # Record independence: the stand-ins depend on the conversation only, not on what came before.
    alone = ConversationSurrogates(["Dear Mary,"]).surrogate("Mary")
    other = ConversationSurrogates(["Mary and Anna and Susan"])
    [other.surrogate(n) for n in ("Anna", "Susan", "Mary")]
    assert ConversationSurrogates(["Dear Mary,"]).surrogate("Mary") == alone


@pytest.mark.real_model
def test_the_pseudonymizer_puts_surrogates_for_names_and_typed_pseudonyms_for_the_rest():
    from backends.pii.pseudonymize import Pseudonymizer, shared_pseudonymizer
    pseudonymizer = shared_pseudonymizer("surrogate")
    first, second = pseudonymizer.pseudonymize_texts([
        "I'm Daniel Okafor, mail me at d.okafor@brightmail.com. My wife Sofia Rossi asks too.",
        "Mr. Okafor again: did Sofia Rossi reply?"])
    assert "Daniel" not in first + second and "Okafor" not in first + second and "Rossi" not in first + second
    assert "<EMAIL_ADDRESS_1>" in first and "<PERSON_" not in first + second
    daniel_okafor = first[len("I'm "):first.index(",")]
    assert pseudonymizer.pseudonymize("I'm Daniel Okafor. Mr. Okafor is me.").startswith("I'm Aaron Smith. Mr. Smith")
    sofia_rossi = first[first.index("My wife ") + len("My wife "):first.index(" asks")]
    assert second == f"Mr. {daniel_okafor.split()[1]} again: did {sofia_rossi} reply?"
    gender, _ = _lists()
    assert gender.get(daniel_okafor.split()[0].lower()) == "male" and gender.get(sofia_rossi.split()[0].lower()) == "female"
    with pytest.raises(ValueError, match="pseudonyms must be one of"):
        Pseudonymizer(pseudonyms="random")
