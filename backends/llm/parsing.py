"""Reading model answers. Repairs only what is safe (code fences, prose around the payload, Python
vs JSON quoting, a keyword's case and spacing); anything else raises MalformedOutput, which the
fan-out counts as a failure: the record is dead-lettered (facets, keyword selection) or the call gets
its step's offline answer (names, exemplars, keyword-set refinement; backends/llm/steps.py)."""

from __future__ import annotations

import ast
import json
import re

MAX_SUMMARY_CHARS = 500
MAX_NAME_WORDS = 10
MAX_DESCRIPTION_SENTENCES = 2


class MalformedOutput(ValueError):
    """The model's answer cannot be read as the expected format."""


_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(.*?)\n?```\s*$", re.S)


def _strip_fence(text: str) -> tuple[str, bool]:
    match = _FENCE.match(text)
    return (match.group(1), True) if match else (text, False)


def _literal(snippet: str):
    """JSON first, then a Python literal (models often answer ['a', 'b'] with single quotes)."""
    try:
        return json.loads(snippet)
    except ValueError:
        pass
    try:
        return ast.literal_eval(snippet)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
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


def parse_facets(text: str) -> tuple[str, bool]:
    """(one-sentence Summary, repaired?) from the facet JSON."""
    data, repaired = _payload(text, "{", "}")
    if not isinstance(data, dict):
        raise MalformedOutput("facets are not a JSON object")
    summary = next((v for k, v in data.items() if str(k).strip().lower() == "summary"), None)
    if not isinstance(summary, str) or not summary.strip():
        raise MalformedOutput("facets have no Summary")
    summary = " ".join(summary.split())
    if len(summary) > MAX_SUMMARY_CHARS:
        summary, repaired = summary[:MAX_SUMMARY_CHARS], True
    return summary, repaired


def _string_list(text: str) -> tuple[list[str], bool]:
    data, repaired = _payload(text, "[", "]")
    if not isinstance(data, (list, tuple)) or not all(isinstance(x, str) for x in data):
        raise MalformedOutput("not a list of strings")
    return [" ".join(x.lower().split()) for x in data], repaired


def parse_topic_keywords(text: str, max_keywords: int) -> tuple[list[str], bool]:
    """(distinct lower-case keywords, at most max_keywords; repaired?) from {"keywords": [...]} or a bare
    list. These are the model's own words: the selector maps them onto K (keyword_mapping.py)."""
    body = text.strip() if isinstance(text, str) else text
    if isinstance(body, str) and body.lstrip("`json \n").startswith("["):
        words, repaired = _string_list(text)
    else:
        data, repaired = _payload(text, "{", "}")
        value = next((v for k, v in data.items() if str(k).strip().lower() == "keywords"), None) \
            if isinstance(data, dict) else None
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise MalformedOutput("no list of keyword strings")
        words = [" ".join(x.lower().split()) for x in value]
    distinct = [w for w in dict.fromkeys(words) if w and w != "na"]
    if len(distinct) != len(words) or len(distinct) > max_keywords:
        repaired = repaired or words != ["na"]
    return distinct[:max_keywords], repaired


def parse_proposed_keywords(text: str, max_keywords: int) -> tuple[list[str], bool]:
    words, repaired = _string_list(text)
    words = [w for w in dict.fromkeys(words) if w and w != "na"]
    return words[:max_keywords], repaired


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def parse_name(text: str) -> tuple[tuple[str, str], bool]:
    """((name of at most 10 words, description of at most two sentences), repaired?) from
    {"name": ..., "description": ...}."""
    data, repaired = _payload(text, "{", "}")
    if not isinstance(data, dict):
        raise MalformedOutput("the name is not a JSON object")
    fields = {str(k).strip().lower(): v for k, v in data.items()}
    name, description = fields.get("name"), fields.get("description")
    if not isinstance(name, str) or not isinstance(description, str):
        raise MalformedOutput("no name or description")
    name = " ".join(name.split()).strip(" .\"'")
    description = " ".join(description.split())
    if not name or not description:
        raise MalformedOutput("empty name or description")
    words = name.split()
    sentences = _SENTENCE_END.split(description)
    if len(words) > MAX_NAME_WORDS or len(sentences) > MAX_DESCRIPTION_SENTENCES:
        repaired = True
    return (" ".join(words[:MAX_NAME_WORDS]), " ".join(sentences[:MAX_DESCRIPTION_SENTENCES])), repaired


def parse_requests(text: str, max_count: int) -> tuple[list[str], bool]:
    """(distinct requests, at most max_count; repaired?) from {"requests": [...]} or a bare list.
    Whitespace is normalised; length and content are checked by the exemplar stage."""
    body = text.strip() if isinstance(text, str) else text
    if isinstance(body, str) and body.lstrip("`json \n").startswith("["):
        data, repaired = _payload(text, "[", "]")
    else:
        data, repaired = _payload(text, "{", "}")
        data = next((v for k, v in data.items() if str(k).strip().lower() == "requests"), None) \
            if isinstance(data, dict) else None
    if not isinstance(data, (list, tuple)) or not all(isinstance(x, str) for x in data):
        raise MalformedOutput("no list of request strings")
    requests = [r for r in dict.fromkeys(" ".join(x.split()) for x in data) if r]
    if not requests:
        raise MalformedOutput("no requests")
    if len(requests) != len(data) or len(requests) > max_count:
        repaired = True
    return requests[:max_count], repaired


def parse_refinement(text: str) -> tuple[tuple[list[str], list[str]], bool]:
    data, repaired = _payload(text, "{", "}")
    if not isinstance(data, dict):
        raise MalformedOutput("refinement is not a JSON object")
    lists = []
    for key in ("remove", "add"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise MalformedOutput(f"{key!r} is not a list of strings")
        lists.append([w for w in dict.fromkeys(" ".join(x.lower().split()) for x in value) if w])
    return (lists[0], lists[1]), repaired


def _rating(value) -> tuple[int, bool]:
    """A 1-5 rating; an integral float or a digit string is repaired, anything else is malformed."""
    repaired = False
    if isinstance(value, str) and value.strip().isdigit():
        value, repaired = int(value.strip()), True
    elif isinstance(value, float) and value.is_integer():
        value, repaired = int(value), True
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise MalformedOutput("a rating is not an integer from 1 to 5")
    return value, repaired


def parse_judgement(text: str) -> tuple[tuple[int, int, int], bool]:
    """((rating of A, rating of B, preferred: 0 = A, 1 = B), repaired?) from
    {"rating_a": 1-5, "rating_b": 1-5, "preferred": "A"|"B"}. A numeric preference is ambiguous
    (0/1 or 1/2?) and is not guessed."""
    data, repaired = _payload(text, "{", "}")
    if not isinstance(data, dict):
        raise MalformedOutput("judgement is not a JSON object")
    fields = {str(k).strip().lower(): v for k, v in data.items()}
    if not {"rating_a", "rating_b", "preferred"} <= fields.keys():
        raise MalformedOutput("judgement lacks rating_a, rating_b or preferred")
    rating_a, fixed_a = _rating(fields["rating_a"])
    rating_b, fixed_b = _rating(fields["rating_b"])
    preferred = fields["preferred"]
    if not isinstance(preferred, str):
        raise MalformedOutput("preferred is not 'A' or 'B'")
    choice = " ".join(preferred.replace("_", " ").split()).upper()
    choice = choice[len("SUMMARY "):] if choice.startswith("SUMMARY ") else choice
    if choice not in ("A", "B"):
        raise MalformedOutput("preferred is not 'A' or 'B'")
    repaired = repaired or fixed_a or fixed_b or preferred != choice
    return (rating_a, rating_b, 0 if choice == "A" else 1), repaired
