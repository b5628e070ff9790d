"""docs/options.md's tables and templates/metadata.json are generated from the flags' declarations
(beam_jobs/option_docs.py): both are current, and a flag added to a params dataclass reaches both
(an LLM flag, declared in LLMParams, also reaches the workers' params).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import re
import shutil

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from backends import factory
from beam_jobs import option_docs
from config.flags import argument_parser, options_class, params_from
from config.insights import InsightsParams
from config.llm import LLMParams
from config.privacy import RETIRED_FLAGS
from core.params import Params, advanced_flag, flag, is_advanced, parse_bool


def test_the_documents_are_what_the_flags_generate():
    assert option_docs.stale() == [], "run: .venv/bin/python -m beam_jobs.option_docs --write"
    assert option_docs.main(["--check"]) == 0


@dataclasses.dataclass(frozen=True)
class ToyParams(Params):
    """A toy group: its docstring is the section's intro (see docs/input.md)."""

    toy_flag: int = flag(3, "Toy knob: bigger toys for --toy_mode big.", type=int, public=True)
    toy_mode: str = flag("small", "How big the toys are.", choices=("small", "big"))
    toy_cache: str | None = flag(None, "Where the toys are kept.")
    toy_rerun: bool = flag(False, "Allow it.", type=parse_bool)
    toy_level: int = flag(2, "How loud.", type=int, ge=1, le=3)
    toy_share: float = flag(0.5, "Of the toys.", type=float, gt=0, lt=1)
    toy_offset: float = flag(0.0, "Shift.", type=float, ge=-1, finite=True)


@dataclasses.dataclass(frozen=True)
class ToyJob(InsightsParams):
    """The insights job's groups plus a toy one: the one place a new flag is declared."""

    toy: ToyParams


def _copy_documents(root) -> str:
    for path in (option_docs.OPTIONS_MD, option_docs.METADATA_JSON):
        os.makedirs(os.path.dirname(root / path), exist_ok=True)
        shutil.copy(os.path.join(option_docs.ROOT, path), root / path)
    return str(root)


def test_a_new_flag_reaches_both_documents(tmp_path):
    root = _copy_documents(tmp_path)
    assert option_docs.stale(root, ToyJob) == [option_docs.OPTIONS_MD, option_docs.METADATA_JSON]
    assert option_docs.write(root, ToyJob) == [option_docs.OPTIONS_MD, option_docs.METADATA_JSON]
    assert option_docs.stale(root, ToyJob) == []

    page = (tmp_path / option_docs.OPTIONS_MD).read_text()
    generated = page[page.index(option_docs.BEGIN):page.index(option_docs.END)]
    assert "## Toy\n\nA toy group: its docstring is the section's intro (see [docs/input.md](input.md)).\n" in generated
    assert "| `--toy_flag` | 3 | Toy knob: bigger toys for `--toy_mode` big. |" in generated
    assert "| `--toy_mode` | small | How big the toys are. Choices: `small`, `big`. |" in generated
    assert "| `--toy_cache` | unset | Where the toys are kept. |" in generated
    assert "| `--toy_rerun` | false | Allow it. |" in generated
    # a bound is declared with its flag, and both documents and the check read it from there
    assert "| `--toy_level` | 2 | How loud. Must be `in [1, 3]`. |" in generated
    assert "| `--toy_share` | 0.5 | Of the toys. Must be `in (0, 1)`. |" in generated
    assert "| `--toy_offset` | 0.0 | Shift. Must be `>= -1 and finite`. |" in generated
    # the hand-written prose around the generated region is kept as it was
    original = open(os.path.join(option_docs.ROOT, option_docs.OPTIONS_MD), encoding="utf-8").read()
    assert page.split(option_docs.BEGIN)[0] == original.split(option_docs.BEGIN)[0]
    assert page.split(option_docs.END)[1] == original.split(option_docs.END)[1]

    parameters = {p["name"]: p for p in json.loads((tmp_path / option_docs.METADATA_JSON).read_text())["parameters"]}
    assert parameters["toy_flag"] == {"name": "toy_flag", "label": "Toy flag", "isOptional": True,
                                      "helpText": "Toy knob: bigger toys for --toy_mode big.", "regexes": ["^[0-9]+$"]}
    assert parameters["toy_mode"]["regexes"] == ["^(small|big)$"]
    assert "regexes" not in parameters["toy_cache"]
    assert parameters["toy_rerun"]["regexes"] == ["^(true|false)$"]
    assert parameters["toy_level"]["regexes"] == ["^(1|2|3)$"]
    assert parameters["toy_level"]["helpText"] == "How loud. Must be in [1, 3]."
    assert parameters["toy_share"]["regexes"] == [option_docs.NUMBER]
    assert parameters["toy_offset"]["regexes"] == [option_docs.SIGNED_NUMBER]
    for bad, message in ((dict(toy_level=4), "--toy_level must be in \\[1, 3\\], got 4"),
                         (dict(toy_share=1.0), "--toy_share must be in \\(0, 1\\)"),
                         (dict(toy_offset=float("inf")), "--toy_offset must be >= -1 and finite")):
        with pytest.raises(ValueError, match=message):
            ToyParams(**bad)
    assert ToyParams(toy_level=3, toy_share=0.01, toy_offset=-1).toy_level == 3
    assert not set(RETIRED_FLAGS) & set(parameters)


@dataclasses.dataclass(frozen=True)
class ToyLLMParams(LLMParams):
    """The LLM group with one toy flag more."""

    llm_toy_knob: int = flag(3, "Toy: how hard the model is asked to try.", type=int, public=True)


@dataclasses.dataclass(frozen=True)
class ToyLLMJob(InsightsParams):
    """The insights job with the toy LLM group: an LLM flag is declared in LLMParams, and nowhere else."""

    llm: ToyLLMParams


def test_a_new_llm_flag_is_declared_once_and_reaches_the_documents_and_the_workers(tmp_path):
    root = _copy_documents(tmp_path)
    assert option_docs.write(root, ToyLLMJob) == [option_docs.OPTIONS_MD, option_docs.METADATA_JSON]
    page = (tmp_path / option_docs.OPTIONS_MD).read_text()
    llm_section = page[page.index("## LLM\n"):page.index(option_docs.END)]
    assert "| `--llm_toy_knob` | 3 | Toy: how hard the model is asked to try. |" in llm_section
    parameters = {p["name"]: p for p in json.loads((tmp_path / option_docs.METADATA_JSON).read_text())["parameters"]}
    assert parameters["llm_toy_knob"] == {"name": "llm_toy_knob", "label": "LLM toy knob", "isOptional": True,
                                          "helpText": "Toy: how hard the model is asked to try.",
                                          "regexes": ["^[0-9]+$"]}
    # the settings are no flags: neither document has them
    assert "backoff_base_s" not in page and "backoff_base_s" not in parameters

    # a flag: registered, parsed (as Dataflow passes it) into the params, and public as declared
    options = options_class(ToyLLMParams)
    assert "llm_toy_knob" in {action.dest for action in argument_parser(options)._actions}
    params = params_from(PipelineOptions(["--llm_backend=openai", "--llm_base_url=http://127.0.0.1:9/v1",
                                          "--llm_model=m", "--llm_toy_knob=7"]).view_as(options), ToyLLMParams)
    assert params.llm_toy_knob == 7 and params.public_config()["llm_toy_knob"] == 7

    # the workers' params are the same class: the flag reaches an LLM step, pickled as Beam ships it
    resolved = params.resolved()
    assert type(resolved) is ToyLLMParams and resolved.llm_toy_knob == 7
    extractor = pickle.loads(pickle.dumps(factory.make_facet_extractor(1000, resolved)))
    assert extractor.config.llm_toy_knob == 7


def test_check_mode_fails_on_a_stale_document(tmp_path, capsys):
    root = _copy_documents(tmp_path)
    metadata = tmp_path / option_docs.METADATA_JSON
    metadata.write_text(metadata.read_text().replace("Total delta", "Delta"))
    assert option_docs.main(["--check", "--root", root]) == 1
    assert "templates/metadata.json" in capsys.readouterr().err
    assert option_docs.main(["--write", "--root", root]) == 0
    assert option_docs.main(["--check", "--root", root]) == 0


def test_a_page_without_the_generated_markers_is_refused():
    with pytest.raises(ValueError, match="no generated region"):
        option_docs.options_page("# Options\n\nprose only\n")


@pytest.mark.parametrize("name,label", [("keywords_per_vote", "Keywords per vote"), ("llm_base_url", "LLM base URL"),
                                        ("llm_timeout_s", "LLM timeout (s)"), ("window_days", "Window (days)")])
def test_labels_are_the_flag_names_in_words(name, label):
    assert option_docs.words(name) == label


def test_help_text_becomes_markdown_that_renders_as_written():
    assert option_docs.markdown("puts <PERSON_1> | a*b") == "puts &lt;PERSON_1&gt; \\| a\\*b"
    assert option_docs.markdown("see README.md and docs/privacy.md") == (
        "see [README.md](../README.md) and [docs/privacy.md](privacy.md)")
    assert option_docs.markdown("with --allow_rerun=true or `--x <y>`") == "with `--allow_rerun=true` or `--x <y>`"


def _rows(markdown_text: str) -> list[str]:
    """The flags of the tables in a piece of docs/options.md, in order."""
    return re.findall(r"^\| `--(\w+)` \|", markdown_text, re.M)


def test_the_page_and_the_template_list_the_flags_a_user_sets_first():
    page = open(os.path.join(option_docs.ROOT, option_docs.OPTIONS_MD), encoding="utf-8").read()
    generated = page[page.index(option_docs.BEGIN):page.index(option_docs.END)]
    user_part, advanced_part = generated.split(f"\n## {option_docs.ADVANCED_HEADING}\n")
    groups = option_docs.groups()
    assert _rows(user_part) == [field.name for group in groups for field in group.user_fields]
    assert _rows(advanced_part) == [field.name for group in groups for field in group.advanced_fields]
    sections = re.split(r"^## ", user_part, flags=re.M)[1:]
    assert sections and all(_rows(section) for section in sections), "a group before Advanced has no flag"

    flags = {field.name: field for group in groups for field in group.fields}
    parameters = json.load(open(os.path.join(option_docs.ROOT, option_docs.METADATA_JSON)))["parameters"]
    advanced = [is_advanced(flags[parameter["name"]]) for parameter in parameters]
    assert any(advanced) and not all(advanced) and advanced == sorted(advanced), "an advanced parameter leads"
    for parameter, is_it in zip(parameters, advanced):
        assert (parameter.get("groupName") == option_docs.ADVANCED_HEADING) is is_it, parameter["name"]


@dataclasses.dataclass(frozen=True)
class ToyResearchParams(Params):
    """A toy group of research knobs only: its intro goes with its advanced table."""

    toy_knob: int = advanced_flag(3, "A research knob. Its default is the product's.", type=int)


@dataclasses.dataclass(frozen=True)
class ToyResearchJob(InsightsParams):
    toy_research: ToyResearchParams


def test_a_group_of_advanced_flags_only_is_documented_under_advanced(tmp_path):
    root = _copy_documents(tmp_path)
    option_docs.write(root, ToyResearchJob)
    page = (tmp_path / option_docs.OPTIONS_MD).read_text()
    generated = page[page.index(option_docs.BEGIN):page.index(option_docs.END)]
    user_part, advanced_part = generated.split(f"\n## {option_docs.ADVANCED_HEADING}\n")
    assert "Toy research" not in user_part and "toy_knob" not in user_part
    section = advanced_part[advanced_part.index("### Toy research\n"):]
    assert section.startswith("### Toy research\n\nA toy group of research knobs only: its intro goes with its "
                              "advanced table.\n\n| flag | default | meaning |")
    assert "| `--toy_knob` | 3 | A research knob. Its default is the product's. |" in section
    parameters = json.loads((tmp_path / option_docs.METADATA_JSON).read_text())["parameters"]
    assert parameters[-1] == {"name": "toy_knob", "label": "Toy knob", "isOptional": True, "groupName": "Advanced",
                              "helpText": "A research knob. Its default is the product's.", "regexes": ["^[0-9]+$"]}
