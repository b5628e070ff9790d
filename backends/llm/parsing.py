"""Reading model answers.

Each answer's shape is one pydantic model below: FacetsAnswer, KeywordsAnswer (keyword selection),
ProposalsAnswer (keyword proposals), NameAnswer, RequestsAnswer (exemplars), LabelsAnswer (the
centre decoder's candidate names), RefinementAnswer (keyword-set refinement) and JudgementAnswer
(eval/utility/llm_judge.py). prompts.py sends a model's JSON schema (response_schema) with the
prompts whose backend can enforce one, and the parse functions validate with the same model, so each
shape is declared once.

Reading an answer is two steps. First the safe repairs: code fences, prose around the payload, Python
vs JSON quoting (_payload), a key's case and spacing (_named). Then the model's validation, whose
validators normalise (whitespace, a keyword's case, duplicates), apply the limits below and mark what
they cut as repaired. Anything else raises MalformedOutput (pydantic's ValidationError is wrapped in
it), which the fan-out counts as a failure: the record is dead-lettered (facets, keyword selection) or
the call gets its step's offline answer (names, exemplars, keyword-set refinement; backends/llm/steps.py).
"""

from __future__ import annotations

import ast
import copy
import functools
import json
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError, ValidationInfo, field_validator
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema

MAX_SUMMARY_CHARS = 500
MAX_NAME_WORDS = 10
MAX_DESCRIPTION_SENTENCES = 2
MAX_REQUEST_CHARS = 200
# One sentence: no sentence end inside, one at the end; a dot inside a word ("node.js", ".net") is no end.
REQUEST_PATTERN = "^([^.?!\\n]|\\.[A-Za-z0-9]){8,%d}[.?!]$" % (MAX_REQUEST_CHARS - 1)


class MalformedOutput(ValueError):
    """The model's answer cannot be read as the expected format."""


# --- the safe repairs, before validation ------------------------------------------------------------

_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(.*?)\n?```\s*$", re.S)


def _strip_fence(text: str) -> tuple[str, bool]:
    match = _FENCE.match(text)
    return (match.group(1), True) if match else (text, False)


def _literal(snippet: str):
    """JSON first, then a Python literal (models often answer ['a', 'b'] with single quotes)."""
    try:
        return json.loads(snippet)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the interpreter's stack
        pass
    try:
        return ast.literal_eval(snippet)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # TypeError: {{}} is an unhashable set
        raise MalformedOutput(f"not JSON or a Python literal: {snippet[:80]!r}") from None


def _payload(text: str, opening: str, closing: str):
    """(parsed object, repaired?) of the first opening..last closing span of `text`."""
    if not isinstance(text, str) or not text.strip():
        raise MalformedOutput("empty answer")
    body, repaired = _strip_fence(text)
    body = body.strip()
    start, end = body.find(opening), body.rfind(closing)
    if start < 0 or end < start:
        raise MalformedOutput(f"no {opening}...{closing} in the answer")
    if start > 0 or end < len(body) - 1:
        repaired = True
    return _literal(body[start:end + 1]), repaired


def _named(data, names: tuple[str, ...], *, last_wins: bool = False) -> dict:
    """The fields `names` of an answer object, each found whatever its key's case and spacing
    ("Summary", " name "); other keys are dropped, not refused (models add some: "Task"). Of two keys
    that differ only so, the first is read, or the last with last_wins (how the name and judgement
    readers always read them)."""
    if not isinstance(data, dict):
        raise MalformedOutput("the answer is not a JSON object")
    found = {}
    for key, value in data.items():
        name = str(key).strip().lower()
        if name in names and (last_wins or name not in found):
            found[name] = value
    return found


def _object_or_list(text: str, field: str) -> tuple[dict, bool]:
    """({field: value}, repaired?) from {field: [...]} or a bare list (small models often answer
    with the list alone)."""
    if isinstance(text, str) and text.strip().lstrip("`json \n").startswith("["):
        data, repaired = _payload(text, "[", "]")
        return {field: data}, repaired
    data, repaired = _payload(text, "{", "}")
    return _named(data, (field,)), repaired


# --- the answers' models ----------------------------------------------------------------------------

def _asked(**bounds) -> FieldInfo:
    """Bounds the JSON schema asks a server to enforce (llama.cpp and vLLM do) that validation does not
    check: a backend that does not enforce them (Gemini gets JSON mode only) may break them, and its
    answer is read by the validators' more lenient rules instead (cut at the limits below and counted
    as repaired, an empty keyword dropped, an exemplar's length and form left to the exemplar stage)."""
    return Field(json_schema_extra=bounds)


def _mark_repaired(info: ValidationInfo) -> None:
    """Notes in the validation context (_validate's) that a validator cut or fixed the answer."""
    if isinstance(info.context, dict):
        info.context["repaired"] = True


def _cap(info: ValidationInfo) -> int | None:
    """The call's own limit on a list's length (a count the prompt names), from _validate's context."""
    return info.context.get("max_items") if isinstance(info.context, dict) else None


def _one_line(text: str, blank: str) -> str:
    """`text` on one line, each run of whitespace one space; ValueError(`blank`) when nothing is left."""
    text = " ".join(text.split())
    if not text:
        raise ValueError(blank)
    return text


def _keyword(text: str) -> str:
    """A keyword's case and spacing do not matter ("Machine  Learning" is "machine learning")."""
    return " ".join(text.lower().split())


class _Answer(BaseModel):
    # strict: pydantic converts nothing ("3" -> 3, b"x" -> "x", ("a",) -> ["a"] from a Python literal);
    # the few conversions these readers make are their own (JudgementAnswer, parse_requests).
    # extra="forbid" puts additionalProperties: false into the schema, which OpenAI's strict
    # json_schema mode requires (with every property required: no defaults here); an answer's extra
    # keys are dropped before validation (_named), not refused.
    model_config = ConfigDict(strict=True, extra="forbid")


class FacetsAnswer(_Answer):
    """The facet prompt's answer, {"summary": "<one sentence>"}: the summary on one line, cut at
    MAX_SUMMARY_CHARS (the schema asks for at most 300 characters)."""

    summary: Annotated[str, _asked(minLength=1, maxLength=300)]

    @field_validator("summary")
    @classmethod
    def _short_summary(cls, summary: str, info: ValidationInfo) -> str:
        summary = _one_line(summary, "the summary is blank")
        if len(summary) > MAX_SUMMARY_CHARS:
            _mark_repaired(info)
            summary = summary[:MAX_SUMMARY_CHARS]
        return summary


class KeywordsAnswer(_Answer):
    """The keyword-selection prompt's answer, {"keywords": [...]}: the model's own words, lower case,
    distinct, at most the call's count (the selector maps them onto K: keyword_mapping.py). The
    schema's maxItems is the call's (prompts.keywords_schema)."""

    # Distinct entries are not asked for: llama.cpp does not enforce uniqueItems.
    keywords: list[Annotated[str, _asked(minLength=1, maxLength=40)]]

    @field_validator("keywords")
    @classmethod
    def _distinct(cls, keywords: list[str], info: ValidationInfo) -> list[str]:
        words = [_keyword(w) for w in keywords]
        distinct = [w for w in dict.fromkeys(words) if w and w != "na"]
        cap = _cap(info)
        # "NA" alone is the model saying that nothing fits: an answer, not a repair.
        if (len(distinct) != len(words) or (cap is not None and len(distinct) > cap)) and words != ["na"]:
            _mark_repaired(info)
        return distinct[:cap]


class ProposalsAnswer(RootModel[list[str]]):
    """The keyword-proposal prompt's answer, a bare list (the prompt asks for a Python list and sends
    no schema): distinct lower-case keywords, "NA" dropped, at most the call's count. Dropping
    duplicates and cutting are not counted as repairs here."""

    model_config = ConfigDict(strict=True)

    @field_validator("root")
    @classmethod
    def _distinct(cls, words: list[str], info: ValidationInfo) -> list[str]:
        return [w for w in dict.fromkeys(_keyword(w) for w in words) if w and w != "na"][:_cap(info)]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


class NameAnswer(_Answer):
    """The naming prompt's answer, {"name": ..., "description": ...}: a name of at most
    MAX_NAME_WORDS words and a description of at most MAX_DESCRIPTION_SENTENCES sentences, longer
    ones cut and counted as repaired."""

    name: Annotated[str, _asked(minLength=1, maxLength=80)]
    description: Annotated[str, _asked(minLength=1, maxLength=400)]

    @field_validator("name")
    @classmethod
    def _short_name(cls, name: str, info: ValidationInfo) -> str:
        # Quotes and dots around a name are the model's punctuation, not the name.
        words = " ".join(name.split()).strip(" .\"'").split()
        if not words:
            raise ValueError("the name is empty")
        if len(words) > MAX_NAME_WORDS:
            _mark_repaired(info)
        return " ".join(words[:MAX_NAME_WORDS])

    @field_validator("description")
    @classmethod
    def _short_description(cls, description: str, info: ValidationInfo) -> str:
        description = _one_line(description, "the description is empty")
        sentences = _SENTENCE_END.split(description)
        if len(sentences) > MAX_DESCRIPTION_SENTENCES:
            _mark_repaired(info)
        return " ".join(sentences[:MAX_DESCRIPTION_SENTENCES])


class RequestsAnswer(_Answer):
    """The exemplar prompts' answer, {"requests": [...]}: distinct requests, whitespace normalised,
    at least one, at most the call's count. The schema asks for one sentence each (REQUEST_PATTERN)
    and the call's count (prompts.exemplars_schema); a request's length and content are checked by
    the exemplar stage."""

    requests: list[Annotated[str, _asked(pattern=REQUEST_PATTERN)]]

    @field_validator("requests")
    @classmethod
    def _distinct(cls, requests: list[str], info: ValidationInfo) -> list[str]:
        distinct = [r for r in dict.fromkeys(" ".join(x.split()) for x in requests) if r]
        if not distinct:
            raise ValueError("no requests")
        cap = _cap(info)
        if len(distinct) != len(requests) or (cap is not None and len(distinct) > cap):
            _mark_repaired(info)
        return distinct[:cap]


class LabelsAnswer(_Answer):
    """The centre decoder's prompts' answer, {"labels": [{"name": ..., "description": ...}]}: candidate
    names for one released topic, each read as a NameAnswer, at least one, at most the call's count
    (prompts.labels_schema); which one fits is the search's call (backends/centre_decoder.py)."""

    labels: list[NameAnswer]

    @field_validator("labels")
    @classmethod
    def _some(cls, labels: list[NameAnswer], info: ValidationInfo) -> list[NameAnswer]:
        if not labels:
            raise ValueError("no labels")
        cap = _cap(info)
        if cap is not None and len(labels) > cap:
            _mark_repaired(info)
        return labels[:cap]


class RefinementAnswer(_Answer):
    """The refinement prompt's answer, {"remove": [...], "add": [...]}: distinct lower-case keywords
    (whether they are in the list is the refiner's check: steps.LLMKeywordSetRefiner)."""

    remove: list[str]
    add: list[str]

    @field_validator("remove", "add")
    @classmethod
    def _distinct(cls, words: list[str]) -> list[str]:
        return [w for w in dict.fromkeys(_keyword(x) for x in words) if w]


class JudgementAnswer(_Answer):
    """The judge prompt's answer (eval only), {"rating_a": 1-5, "rating_b": 1-5, "preferred": "A"|"B"}.
    An integral float or a digit string is read as the rating and a preference's case, spacing and
    "Summary " prefix are dropped, each counted as repaired; a numeric preference is ambiguous (0/1 or
    1/2?) and is not guessed."""

    rating_a: int = Field(ge=1, le=5)
    rating_b: int = Field(ge=1, le=5)
    preferred: Literal["A", "B"]

    @field_validator("rating_a", "rating_b", mode="before")
    @classmethod
    def _integral(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str) and value.strip().isdigit():
            _mark_repaired(info)
            return int(value.strip())  # "²" is a digit but no int: a ValueError, so a refusal
        if isinstance(value, float) and value.is_integer():
            _mark_repaired(info)
            return int(value)
        return value  # strict: a bool or anything else is refused

    @field_validator("preferred", mode="before")
    @classmethod
    def _letter(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, str):
            return value  # refused by the Literal
        choice = " ".join(value.replace("_", " ").split()).upper().removeprefix("SUMMARY ")
        if choice != value:
            _mark_repaired(info)
        return choice


class _ResponseSchema(GenerateJsonSchema):
    """Pydantic's JSON schema less the titles and the description it writes from the class and field
    names and the docstring: the schema goes with every request and into its cache key
    (fanout.Caller.key), and the prompt already says what to write."""

    def field_title_should_be_set(self, schema) -> bool:
        return False

    def model_schema(self, schema):
        json_schema = super().model_schema(schema)
        json_schema.pop("title", None)
        json_schema.pop("description", None)
        return json_schema


@functools.cache
def _model_schema(model: type[BaseModel]) -> dict:
    return model.model_json_schema(schema_generator=_ResponseSchema)


def response_schema(model: type[BaseModel], **call_bounds: dict) -> dict:
    """The JSON schema of `model`'s answers as prompts.py sends it (a fresh copy), with a call's own
    bounds on its fields (keywords={"maxItems": 5}): counts that the call's prompt names, not the shape."""
    schema = copy.deepcopy(_model_schema(model))
    for field, bounds in call_bounds.items():
        schema["properties"][field].update(bounds)
    return schema


def _validate(model: type[BaseModel], data, max_items: int | None = None) -> tuple[Any, bool]:
    """(the validated answer, whether a validator cut or fixed it); MalformedOutput if it does not fit.
    max_items: the call's limit on the answer's list."""
    context = {"repaired": False, "max_items": max_items}
    try:
        answer = model.model_validate(data, context=context)
    except ValidationError as error:
        # Where and what, never the input: the answer may carry (pseudonymized) conversation text.
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}"
                             for e in error.errors(include_url=False, include_input=False)[:3])
        raise MalformedOutput(f"not a {model.__name__}: {problems}") from None
    return answer, context["repaired"]


# --- the readers ------------------------------------------------------------------------------------

def parse_facets(text: str) -> tuple[str, bool]:
    """(one-sentence Summary, repaired?) from the facet JSON."""
    data, repaired = _payload(text, "{", "}")
    answer, fixed = _validate(FacetsAnswer, _named(data, ("summary",)))
    return answer.summary, repaired or fixed


def parse_topic_keywords(text: str, max_keywords: int) -> tuple[list[str], bool]:
    """(distinct lower-case keywords, at most max_keywords; repaired?) from {"keywords": [...]} or a bare
    list. These are the model's own words: the selector maps them onto K (keyword_mapping.py)."""
    data, repaired = _object_or_list(text, "keywords")
    answer, fixed = _validate(KeywordsAnswer, data, max_keywords)
    return answer.keywords, repaired or fixed


def parse_proposed_keywords(text: str, max_keywords: int) -> tuple[list[str], bool]:
    """(distinct lower-case keywords, at most max_keywords; repaired?) from a bare list."""
    data, repaired = _payload(text, "[", "]")
    answer, _ = _validate(ProposalsAnswer, data, max_keywords)
    return answer.root, repaired


def parse_name(text: str) -> tuple[tuple[str, str], bool]:
    """((name of at most 10 words, description of at most two sentences), repaired?) from
    {"name": ..., "description": ...}."""
    data, repaired = _payload(text, "{", "}")
    answer, fixed = _validate(NameAnswer, _named(data, ("name", "description"), last_wins=True))
    return (answer.name, answer.description), repaired or fixed


def parse_requests(text: str, max_count: int) -> tuple[list[str], bool]:
    """(distinct requests, at most max_count; repaired?) from {"requests": [...]} or a bare list.
    Whitespace is normalised; length and content are checked by the exemplar stage."""
    data, repaired = _object_or_list(text, "requests")
    if isinstance(data.get("requests"), tuple):  # Python quoting's ("a?", "b?"): this reader always took it
        data["requests"] = list(data["requests"])
    answer, fixed = _validate(RequestsAnswer, data, max_count)
    return answer.requests, repaired or fixed


def parse_labels(text: str, max_count: int) -> tuple[list[tuple[str, str]], bool]:
    """([(name, description)], at most max_count; repaired?) from {"labels": [...]} or a bare list."""
    data, repaired = _object_or_list(text, "labels")
    if isinstance(data.get("labels"), list):
        data["labels"] = [_named(item, ("name", "description"), last_wins=True) for item in data["labels"]]
    answer, fixed = _validate(LabelsAnswer, data, max_count)
    return [(label.name, label.description) for label in answer.labels], repaired or fixed


def parse_refinement(text: str) -> tuple[tuple[list[str], list[str]], bool]:
    """((keywords to remove, keywords to add), repaired?) from {"remove": [...], "add": [...]}. The keys
    are read as written, and a missing one is an empty list."""
    data, repaired = _payload(text, "{", "}")
    if not isinstance(data, dict):
        raise MalformedOutput("refinement is not a JSON object")
    answer, _ = _validate(RefinementAnswer, {key: data.get(key, []) for key in ("remove", "add")})
    return (answer.remove, answer.add), repaired


def parse_judgement(text: str) -> tuple[tuple[int, int, int], bool]:
    """((rating of A, rating of B, preferred: 0 = A, 1 = B), repaired?) from
    {"rating_a": 1-5, "rating_b": 1-5, "preferred": "A"|"B"} (JudgementAnswer)."""
    data, repaired = _payload(text, "{", "}")
    answer, fixed = _validate(JudgementAnswer, _named(data, ("rating_a", "rating_b", "preferred"), last_wins=True))
    return (answer.rating_a, answer.rating_b, 0 if answer.preferred == "A" else 1), repaired or fixed
