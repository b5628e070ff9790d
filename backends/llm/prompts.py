"""URANIA's prompts (facet extraction after Clio, free topic keywords that the selector maps onto K,
naming from keywords only, synthetic exemplars from a released topic).

Each builder returns chat messages [{"role": ..., "content": ...}]. Only the facet and keyword-proposal
prompts carry (pseudonymized) conversation text; the keyword-selection prompt carries a facet summary;
the naming, refinement and exemplar prompts carry public or DP-released words only (the exemplar
prompts: a released topic's name, description and keywords, and the model's own earlier requests).
The judge prompt (eval only) carries two topic summaries and nothing else.
"""

from __future__ import annotations

import json
import re

# The answers' shapes are parsing's models: a schema sent here is the one the answer is validated with.
# MAX_REQUEST_CHARS is declared there with the requests' pattern and named here too, where steps.py's
# exemplar token budget refers to it.
from backends.llm.parsing import (
    MAX_REQUEST_CHARS,  # noqa: F401
    FacetsAnswer,
    KeywordsAnswer,
    LabelsAnswer,
    NameAnswer,
    RequestsAnswer,
    response_schema,
)

SYSTEM = "You are a careful analyst of chatbot usage. Follow the output format exactly."

# Every prompt puts its fixed instructions first and the variable part (conversation, summary,
# keywords) last, so an llama.cpp or vLLM server reuses the cached prefix and processes only the
# tail of each request; every answer is one JSON object whose schema (below, from the answer's model in
# parsing.py) a server can enforce.

FACET_INSTRUCTIONS = """Below is a conversation between a user and an AI assistant. Describe what the \
user asked for or talked about in one sentence of at most 25 words, without names, contact details or \
other identifying information. Answer with one JSON object and nothing else: {{"summary": "<the sentence>"}}

<conversation>
{conversation}
</conversation>"""

FACET_SCHEMA = response_schema(FacetsAnswer)

SELECT_INSTRUCTIONS = """Below is what a user wrote to an AI assistant. Write up to {max_keywords} short \
keywords (one to three words each, lower case) for the subject of the request, most important first: \
its general subject area and the kind of task, not details such as names or numbers, and not the \
assistant or the chat itself. Answer with one JSON object and nothing else: {{"keywords": ["...", "..."]}}

<summary>
{summary}
</summary>"""

NAME_INSTRUCTIONS = """The conversations of one topic are described only by the keywords below, from \
most to least frequent. Give the topic a short name (at most 10 words) and a description of exactly \
two sentences saying what people ask about. Use only the keywords: do not invent details, and do not \
mention chatbots or assistants. Answer with one JSON object and nothing else: \
{{"name": "...", "description": "..."}}

<keywords>
{keywords}
</keywords>"""

NAME_SCHEMA = response_schema(NameAnswer)


def keywords_schema(max_keywords: int) -> dict:
    return response_schema(KeywordsAnswer, keywords={"maxItems": max_keywords})


PROPOSE_INSTRUCTIONS = """Here is a summary of a conversation between a user and an AI assistant:
<summary>
{summary}
</summary>

Propose up to {max_keywords} short keywords (one to three words each, lower case) that describe the \
topic of the conversation. Prefer general topic words over details. Answer with a Python list of strings \
and nothing else, e.g. ['keyword one', 'keyword two']."""

REFINE_INSTRUCTIONS = """Here is a list of {size} keywords used to describe the topics of chatbot \
conversations:
{keywords}

Refine the list so that it ends near {target_size} keywords: remove keywords that are redundant, too \
vague or too specific, and add general topic keywords that are missing. Answer with one JSON object and \
nothing else: {{"remove": ["..."], "add": ["..."]}}"""

JUDGE_INSTRUCTIONS = """Here are two summaries of a topic found in chatbot conversations. Each gives the \
topic's name, a short description and keywords.

<summary_a>
{summary_a}
</summary_a>

<summary_b>
{summary_b}
</summary_b>

Rate each summary from 1 (poor) to 5 (excellent) for how informative, specific and coherent it is as a \
description of a topic, then say which of the two you prefer. The order of the summaries means nothing. \
Answer with one JSON object and nothing else:
{{"rating_a": <1-5>, "rating_b": <1-5>, "preferred": "A" or "B"}}"""


EXEMPLAR_RULES = """Each request is one sentence of at most 25 words, in the user's own voice and \
specific, with no names, contact details or other personal information. Answer with one JSON object \
and nothing else: {{"requests": ["...", "..."]}}"""

# Kinds of task a request can be; each call names its own few, in rotation, so that a small model at
# temperature 0 writes different requests instead of restating one (it copies a request it is asked
# to vary unless told what to turn it into).
TASK_KINDS = ("a how-to question", "a request to explain something", "a comparison of two options",
              "a request to fix a problem", "a request for a plan", "a request to write or draft something",
              "a request for recommendations", "a request to check or improve the user's own work")

# One call per focus keyword (drafting) or per request (varying): a small model asked for many at once
# repeats itself.
WRITE_EXEMPLARS_INSTRUCTIONS = """A topic found in chatbot conversations is described below by its name, a \
description and keywords, and by nothing else. Write {count} requests that a user of an AI assistant \
might send on this topic, about its keyword given as the focus, one of each kind listed. """ + EXEMPLAR_RULES + """

<topic>
{topic}
</topic>
Focus: {focus}
Kinds: {kinds}"""

VARY_EXEMPLARS_INSTRUCTIONS = """A topic found in chatbot conversations is described below by its name, a \
description and keywords, followed by one request that fits it well. Write {count} new requests on what \
that request is about, one of each kind listed, each different from it. """ + EXEMPLAR_RULES + """

<topic>
{topic}
</topic>
Request: {request}
Kinds: {kinds}"""


# The centre decoder's candidate names (backends/centre_decoder.py): written from a released topic's
# labels (its name, voted category and keywords; not its description, which holds notes on the noise),
# or varied from one candidate that the search found near the topic's DP centre.
LABEL_RULES = """Each label is a short name (2 to 6 words) and a description of one sentence (at most 20 \
words) saying what users ask the assistant for. Be specific; do not mention chatbots, topics or keywords. \
Answer with one JSON object and nothing else: {{"labels": [{{"name": "...", "description": "..."}}]}}"""

WRITE_LABELS_INSTRUCTIONS = """A topic found in chatbot conversations is known only by the labels below. \
Write {count} different labels for it, each reading it a different way, about its keyword given as the \
focus. """ + LABEL_RULES + """

<topic>
{topic}
</topic>
Focus: {focus}"""

VARY_LABELS_INSTRUCTIONS = """A topic found in chatbot conversations is known only by the labels below, \
followed by one label that fits it well. Write {count} new labels close to that one: more specific, or \
the same requests in other words. """ + LABEL_RULES + """

<topic>
{topic}
</topic>
Label: {label}"""


def exemplars_schema(count: int) -> dict:
    # minItems: a small model otherwise stops after a few (duplicates are removed afterwards); the
    # model's pattern (parsing.REQUEST_PATTERN) makes each item one sentence: unconstrained, a small
    # model strings questions together until the length cap cuts one mid-word.
    return response_schema(RequestsAnswer, requests={"minItems": count, "maxItems": count})


def topic_text(topic: dict) -> str:
    """A released topic as the exemplar prompts show it: its name, description and keywords only, each
    on one line (whitespace collapsed, so no label can end the topic block early)."""
    one_line = lambda text: " ".join(str(text).split())  # noqa: E731
    return (f"Name: {one_line(topic['name'])}\nDescription: {one_line(topic['description'])}\n"
            f"Keywords: {', '.join(one_line(k) for k in topic['keywords'])}")


# A label's longest name and description the schema asks for: unbounded, a 0.5B model's description runs
# on until the call's token budget cuts the JSON, and the call fails.
MAX_LABEL_NAME_CHARS = 60
MAX_LABEL_DESCRIPTION_CHARS = 160


def labels_schema(count: int) -> dict:
    schema = response_schema(LabelsAnswer, labels={"minItems": count, "maxItems": count})
    label = schema["$defs"]["NameAnswer"]["properties"]
    label["name"]["maxLength"], label["description"]["maxLength"] = MAX_LABEL_NAME_CHARS, MAX_LABEL_DESCRIPTION_CHARS
    return schema


def label_topic_text(topic: dict) -> str:
    """A released topic as the centre decoder's prompts show it: its name, voted category and keywords,
    each on one line (whitespace collapsed)."""
    one_line = lambda text: " ".join(str(text).split())  # noqa: E731
    lines = [f"Name: {one_line(topic['name'])}"]
    if topic.get("voted_category"):
        lines.append(f"Category: {one_line(topic['voted_category'])}")
    return "\n".join(lines + [f"Keywords: {', '.join(one_line(k) for k in topic.get('keywords') or [])}"])


def write_labels_messages(topic: dict, focus: str, count: int) -> list[dict]:
    return _messages(WRITE_LABELS_INSTRUCTIONS.format(topic=label_topic_text(topic), focus=focus, count=count))


def vary_labels_messages(topic: dict, label: str, count: int) -> list[dict]:
    return _messages(VARY_LABELS_INSTRUCTIONS.format(topic=label_topic_text(topic), label=label, count=count))


def _messages(user: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def facet_messages(conversation_text: str) -> list[dict]:
    return _messages(FACET_INSTRUCTIONS.format(conversation=conversation_text))


def select_messages(summary: str, max_keywords: int) -> list[dict]:
    return _messages(SELECT_INSTRUCTIONS.format(summary=summary, max_keywords=max_keywords))


def name_messages(keywords: list[str]) -> list[dict]:
    return _messages(NAME_INSTRUCTIONS.format(keywords="\n".join(keywords)))


def propose_messages(summary: str, max_keywords: int) -> list[dict]:
    return _messages(PROPOSE_INSTRUCTIONS.format(summary=summary, max_keywords=max_keywords))


def refine_messages(keywords: list[str], target_size: int) -> list[dict]:
    return _messages(REFINE_INSTRUCTIONS.format(size=len(keywords), target_size=target_size,
                                                keywords=json.dumps(list(keywords), ensure_ascii=False)))


def judge_messages(summary_a: str, summary_b: str) -> list[dict]:
    return _messages(JUDGE_INSTRUCTIONS.format(summary_a=summary_a, summary_b=summary_b))


def task_kinds(start: int, count: int) -> str:
    """`count` task kinds, from TASK_KINDS[start] on, in rotation."""
    return "; ".join(TASK_KINDS[(start + i) % len(TASK_KINDS)] for i in range(count))


def write_exemplars_messages(topic: dict, focus: str, count: int, first_kind: int = 0) -> list[dict]:
    return _messages(WRITE_EXEMPLARS_INSTRUCTIONS.format(topic=topic_text(topic), focus=focus, count=count,
                                                         kinds=task_kinds(first_kind, count)))


def vary_exemplars_messages(topic: dict, request: str, count: int, first_kind: int = 0) -> list[dict]:
    return _messages(VARY_EXEMPLARS_INSTRUCTIONS.format(topic=topic_text(topic), request=request, count=count,
                                                        kinds=task_kinds(first_kind, count)))


def _head_pattern(template: str, record_field: str) -> re.Pattern:
    """The template's text before `record_field`, its other fields (counts such as max_keywords)
    matching any integer."""
    head = template.split("{" + record_field + "}")[0]
    parts = re.split(r"(\{\w+\})", head)
    return re.compile("".join(r"\d+" if i % 2 else re.escape(part.replace("{{", "{").replace("}}", "}"))
                              for i, part in enumerate(parts)))


# Each prompt's text up to its record part (the conversation, summary or keyword list): the same for
# every record, so a server may compute it once (the local backend's public-prefix cache).
PUBLIC_HEADS = tuple(_head_pattern(template, field) for template, field in (
    (FACET_INSTRUCTIONS, "conversation"), (SELECT_INSTRUCTIONS, "summary"), (NAME_INSTRUCTIONS, "keywords"),
    (PROPOSE_INSTRUCTIONS, "summary"), (REFINE_INSTRUCTIONS, "keywords"), (JUDGE_INSTRUCTIONS, "summary_a"),
    (WRITE_EXEMPLARS_INSTRUCTIONS, "topic"), (VARY_EXEMPLARS_INSTRUCTIONS, "topic"),
    (WRITE_LABELS_INSTRUCTIONS, "topic"), (VARY_LABELS_INSTRUCTIONS, "topic")))


def public_head(messages: list[dict]) -> str | None:
    """The user message's text up to its record part when `messages` are one of the prompts built here
    (SYSTEM, then one user message), else None. It holds the instructions and integer parameters
    only, never record text: the record's part starts where the head ends."""
    if (len(messages) != 2 or messages[0] != {"role": "system", "content": SYSTEM}
            or messages[1].get("role") != "user" or not isinstance(messages[1].get("content"), str)):
        return None
    for pattern in PUBLIC_HEADS:
        match = pattern.match(messages[1]["content"])
        if match:
            return match.group(0)
    return None
