"""URANIA's prompts (facet extraction after Clio, keyword selection from K, naming from keywords only).

Each builder returns chat messages [{"role": ..., "content": ...}]. Only the facet and keyword-proposal
prompts carry (pseudonymized) conversation text; the keyword-selection prompt carries a facet summary;
the naming and refinement prompts carry public or DP-released words only. The judge prompt (eval only)
carries two topic summaries and nothing else.
"""

from __future__ import annotations

import json

SYSTEM = "You are a careful analyst of chatbot usage. Follow the output format exactly."

FACET_INSTRUCTIONS = """The following is a conversation between a user and an AI assistant.

<conversation>
{conversation}
</conversation>

Describe the conversation's facets. Answer with one JSON object and nothing else:
{{"Summary": "<one sentence, at most 25 words, saying what the user asked for or talked about; no names, \
contact details or other identifying information>", "Language": "<main language of the user>", \
"Task": "<the kind of task, in a few words>"}}"""

SELECT_INSTRUCTIONS = """Here is a list of keywords:
{keywords}

Here is a summary of a conversation:
<summary>
{summary}
</summary>

Choose up to {max_keywords} keywords from the list above that best describe the topic of the summary. \
Use the keywords exactly as they are written in the list. Answer with a Python list of strings and \
nothing else, e.g. ['keyword one', 'keyword two']. If no keyword in the list fits, answer ['NA']."""

NAME_INSTRUCTIONS = """A cluster of chatbot conversations is described by these keywords, from most to \
least frequent:
{keywords}

Give the cluster a short topic name (at most 10 words) and a description of exactly two sentences. Use \
only the keywords above; do not invent details. Answer in this format and nothing else:
<topic>name</topic><description>two sentences</description>"""

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


def _messages(user: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def facet_messages(conversation_text: str) -> list[dict]:
    return _messages(FACET_INSTRUCTIONS.format(conversation=conversation_text))


def select_messages(summary: str, keywords: tuple[str, ...], max_keywords: int) -> list[dict]:
    return _messages(SELECT_INSTRUCTIONS.format(keywords=json.dumps(list(keywords), ensure_ascii=False),
                                                summary=summary, max_keywords=max_keywords))


def name_messages(keywords: list[str]) -> list[dict]:
    return _messages(NAME_INSTRUCTIONS.format(keywords=json.dumps(list(keywords), ensure_ascii=False)))


def propose_messages(summary: str, max_keywords: int) -> list[dict]:
    return _messages(PROPOSE_INSTRUCTIONS.format(summary=summary, max_keywords=max_keywords))


def refine_messages(keywords: list[str], target_size: int) -> list[dict]:
    return _messages(REFINE_INSTRUCTIONS.format(size=len(keywords), target_size=target_size,
                                                keywords=json.dumps(list(keywords), ensure_ascii=False)))


def judge_messages(summary_a: str, summary_b: str) -> list[dict]:
    return _messages(JUDGE_INSTRUCTIONS.format(summary_a=summary_a, summary_b=summary_b))
