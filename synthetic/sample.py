"""Generates synthetic chatbot conversation logs in the pipeline's input schema.

    python -m beam_jobs.generate_sample --output sample/conversations.jsonl \
        --conversations 5000 --users 1800 --seed 7 --malformed 20

Conversations are multi-turn, drawn from the planted topics of `synthetic.topics` (25 of them), and
owned by users with a heavy-tailed activity distribution (most users have one or two conversations,
a few have dozens), so user-level contribution bounding has something to do. Every conversation
carries a unique made-up ticket code in its first user turn: a stand-in for text that only one user
wrote, which tests look for in the released artifacts. Each valid record also carries
`planted_topic` (ignored by the pipeline) for measuring topic recovery.

`--lengths real` lengthens conversations to a realistic spread: each draws a target length for its
user text from a log-normal fitted to the shared real sets (arena-hard v2 and hh-rlhf harmless, 3,062
conversations: median 139 characters, 90th percentile 533, a long tail), and gets more on-topic user
turns until it reaches it; the planted conversation is the floor, so 3,000 such conversations measure
median ~220 characters, 90th percentile ~640, 99th ~1,900. The default keeps the planted conversations' own lengths (median ~160,
90th percentile ~235), which the tests and the evaluation data use. The scale bench uses `real`.

`--facet_mix` plants languages and kinds of request: the sample is drawn from the ten topics of
`synthetic.facets` (not all 25), each conversation written in a language drawn from its topic's declared
shares (for example poetry 40% Spanish, travel 30% French and 10% German; the rest English) and asking
for the topic's kind of request; each record then also carries `planted_language` and
`planted_request_kind` (ignored by the pipeline) for eval/utility/facet_accuracy.py. Without it the
output is unchanged.

`--malformed N` appends N invalid lines cycling through every kind of bad input the pipeline must
dead-letter (bad JSON, invalid UTF-8, missing ids, wrong types, no user message, oversized records).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import random
import string
from collections.abc import Iterator

from synthetic.facets import FACET_TOPICS, FacetTopic, facet_topic
from synthetic.topics import PLANTED_TOPICS, PlantedTopic

_ASSISTANT_REPLIES = (
    "Sure, here is a step by step answer. First, {hint}. Let me know if you want more detail.",
    "Good question. In short: {hint}. There are a few caveats worth checking.",
    "Here is what I would suggest: {hint}. Does that help?",
)
_HINTS = (
    "start with the simplest option and check the result",
    "break the problem into smaller parts",
    "compare the two options side by side",
    "look at the most common cause first",
)

# One malformed line per kind, cycled by --malformed. Bytes, because invalid UTF-8 is one kind.
MALFORMED_KINDS: tuple[str, ...] = (
    "bad_json",
    "invalid_utf8",
    "missing_user_id",
    "empty_conversation_id",
    "messages_not_a_list",
    "no_user_message",
    "wrong_content_type",
    "not_an_object",
    "oversized",
)


def ticket_code(rng: random.Random) -> str:
    """A made-up 10-character ticket code: text only one user wrote."""
    return "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(10))


def _fill(template: str, topic: PlantedTopic, rng: random.Random) -> str:
    values = {slot: rng.choice(options) for slot, options in topic.slots.items()}
    return template.format(**values)


def conversation_messages(topic: PlantedTopic, rng: random.Random, ticket: str) -> list[dict]:
    """A multi-turn conversation about `topic` whose first user turn carries `ticket`."""
    opener = _fill(rng.choice(topic.openers), topic, rng)
    messages = [{"role": "user", "content": f"{opener} (ticket {ticket})"}]
    followups = rng.sample(topic.followups, k=rng.randint(0, len(topic.followups)))
    for user_turn in [None] + followups:
        if user_turn is not None:
            messages.append({"role": "user", "content": _fill(user_turn, topic, rng)})
        reply = rng.choice(_ASSISTANT_REPLIES).format(hint=rng.choice(_HINTS))
        messages.append({"role": "assistant", "content": reply})
    if rng.random() < 0.2:
        messages.insert(0, {"role": "system", "content": "You are a helpful assistant."})
    return messages


def facet_conversation_messages(facet: FacetTopic, language: str, rng: random.Random, ticket: str) -> list[dict]:
    """A conversation of `facet`'s topic and kind whose user turns are all in `language`; the first
    carries `ticket`."""
    messages = []
    for i, turn in enumerate(facet.turns(language, rng)):
        messages.append({"role": "user", "content": f"{turn} (ticket {ticket})" if i == 0 else turn})
        messages.append({"role": "assistant", "content": rng.choice(_ASSISTANT_REPLIES).format(hint=rng.choice(_HINTS))})
    if rng.random() < 0.2:
        messages.insert(0, {"role": "system", "content": "You are a helpful assistant."})
    return messages


# log(characters of user text) ~ Normal(mean, std), measured on the shared real sets (only these two
# summary figures are kept here, no text).
REAL_LOG_LENGTH = (5.02, 1.08)
LENGTHS = ("planted", "real")


def lengthen(messages: list[dict], topic: PlantedTopic, rng: random.Random, target_chars: int) -> list[dict]:
    """`messages` with more of `topic`'s user turns (and replies) appended until its user text reaches
    `target_chars`; a conversation already that long is returned as it is."""
    lengthened = list(messages)
    user_chars = sum(len(m["content"]) for m in messages if m["role"] == "user")
    while user_chars < target_chars:
        turn = _fill(rng.choice(topic.followups + topic.openers), topic, rng)
        lengthened += [{"role": "user", "content": turn},
                       {"role": "assistant", "content": rng.choice(_ASSISTANT_REPLIES).format(hint=rng.choice(_HINTS))}]
        user_chars += len(turn)
    return lengthened


def user_activity_weights(num_users: int, rng: random.Random) -> list[float]:
    """One activity weight per user (synthetic.stream reuses it for its recurring users)."""
    # Pareto-distributed activity: a heavy tail of very active users, as in real logs.
    return [rng.paretovariate(1.2) for _ in range(num_users)]


def generate_records(num_conversations: int, num_users: int, seed: int,
                     start_date: dt.date = dt.date(2026, 11, 1), days: int = 1,
                     topics: int | None = None, lengths: str = "planted", facet_mix: bool = False) -> Iterator[dict]:
    """Yields valid conversation records (dicts) with a `planted_topic` field, drawn from the first
    `topics` planted topics (default: all of them; with `facet_mix`, of its ten). `lengths`: "planted"
    or "real" (see the module docstring); "real" draws from its own random stream, so the records are
    otherwise the same. `facet_mix`: plant languages and kinds of request (the module docstring)."""
    if num_users < 1 or num_conversations < 0:
        raise ValueError("need at least one user and a non-negative number of conversations")
    pool = tuple(t for f in FACET_TOPICS for t in PLANTED_TOPICS if t.name == f.topic) if facet_mix else PLANTED_TOPICS
    if topics is not None and not 2 <= topics <= len(pool):
        raise ValueError(f"topics must be in [2, {len(pool)}], got {topics}")
    if lengths not in LENGTHS:
        raise ValueError(f"lengths must be one of {LENGTHS}, got {lengths!r}")
    if facet_mix and lengths != "planted":
        raise ValueError("facet_mix writes its own turns in each language: lengths must be 'planted'")
    planted = pool[:topics]
    rng = random.Random(seed)
    length_rng = random.Random(f"lengths-{seed}")
    users = [f"user-{i:06d}" for i in range(num_users)]
    weights = user_activity_weights(num_users, rng)
    # Each user mostly talks about one or two favourite topics.
    favourites = {u: rng.sample(range(len(planted)), k=2) for u in users}
    owners = rng.choices(users, weights=weights, k=num_conversations)
    start = dt.datetime.combine(start_date, dt.time(), tzinfo=dt.timezone.utc)
    for index, user_id in enumerate(owners):
        if rng.random() < 0.75:
            topic = planted[rng.choice(favourites[user_id])]
        else:
            topic = rng.choice(planted)
        timestamp = start + dt.timedelta(seconds=rng.randrange(days * 86400))
        planted_facets = {}
        if facet_mix:
            facet = facet_topic(topic.name)
            language = facet.language(rng)
            messages = facet_conversation_messages(facet, language, rng, ticket_code(rng))
            planted_facets = {"planted_language": language, "planted_request_kind": facet.request_kind}
        else:
            messages = conversation_messages(topic, rng, ticket_code(rng))
        if lengths == "real":
            target = round(length_rng.lognormvariate(*REAL_LOG_LENGTH))
            messages = lengthen(messages, topic, length_rng, target)
        yield {
            "conversation_id": f"conv-{seed}-{index:07d}",
            "user_id": user_id,
            "timestamp": timestamp.isoformat().replace("+00:00", "Z"),
            "messages": messages,
            "source": "urania-beam synthetic sample",
            "planted_topic": topic.name,
            **planted_facets,
        }


def malformed_line(kind: str, index: int) -> bytes:
    """One invalid input line (without newline) of the given kind."""
    ok_messages = [{"role": "user", "content": "How do I bake bread?"}]
    base = {"conversation_id": f"bad-{index}", "user_id": f"bad-user-{index}", "messages": ok_messages}
    if kind == "bad_json":
        return b'{"conversation_id": "bad-%d", "user_id": ' % index
    if kind == "invalid_utf8":
        return json.dumps(base).encode()[:-2] + b'\xff\xfe"}'
    if kind == "missing_user_id":
        base.pop("user_id")
    elif kind == "empty_conversation_id":
        base["conversation_id"] = ""
    elif kind == "messages_not_a_list":
        base["messages"] = "How do I bake bread?"
    elif kind == "no_user_message":
        base["messages"] = [{"role": "assistant", "content": "Hello! How can I help?"}]
    elif kind == "wrong_content_type":
        base["messages"] = [{"role": "user", "content": 42}]
    elif kind == "not_an_object":
        return json.dumps([base]).encode()
    elif kind == "oversized":
        base["messages"] = [{"role": "user", "content": "bread " * 400_000}]
    else:
        raise ValueError(f"unknown malformed kind {kind!r}")
    return json.dumps(base).encode()


def write_sample(path: str, num_conversations: int, num_users: int, seed: int,
                 malformed: int = 0, days: int = 1, topics: int | None = None, lengths: str = "planted",
                 facet_mix: bool = False) -> int:
    """Writes the sample as JSON Lines (gzip if path ends in .gz); returns the number of lines."""
    opener = gzip.open if path.endswith(".gz") else open
    lines = 0
    with opener(path, "wb") as out:
        for record in generate_records(num_conversations, num_users, seed, days=days, topics=topics, lengths=lengths,
                                       facet_mix=facet_mix):
            out.write(json.dumps(record).encode() + b"\n")
            lines += 1
        for i in range(malformed):
            out.write(malformed_line(MALFORMED_KINDS[i % len(MALFORMED_KINDS)], i) + b"\n")
            lines += 1
    return lines
