"""Synthetic conversations with planted canaries (the CanaryBench protocol's data).

Conversations come from beam_jobs.generate_sample (its planted topics, heavy-tailed users), so
clusters mean something; a fraction of them (default 0.6) get a unique secret written into their
first user turn: an e-mail address name.surname.NNNNN@example.com, a phone number, a street address
or a short unique phrase. Every canary occurs in exactly one conversation and is invented here.

    python -m eval.audit.canary_generator --output eval/results/canary_sample --conversations 3000 --users 1100

writes conversations.jsonl, canaries.jsonl (conversation_id, user_id, kind, canary, planted_topic:
private, the benchmark's answer key) and canaries.txt (one canary per line: the job's --canary_file).
"""

from __future__ import annotations

import argparse
import json
import os
import random

from synthetic.sample import generate_records

CANARY_KINDS = ("email", "phone", "street_address", "phrase")
_FIRST = ("alice", "bruno", "chiara", "dmitri", "elena", "farid", "greta", "hugo", "ines", "jonas", "keiko",
          "lars", "maya", "nadia", "oscar", "priya", "quentin", "rosa", "sven", "tomas", "ulla", "vera")
_LAST = ("abernathy", "bellweather", "castellano", "dunmore", "eriksen", "fairbanks", "gallagher", "holloway",
         "ivanova", "jablonski", "kowalczyk", "lindqvist", "montague", "novak", "okonkwo", "pemberton")
_STREETS = ("Maplewood", "Juniper", "Harrowgate", "Oakridge", "Willowbrook", "Copperfield", "Larkspur",
            "Thornbury", "Silverlake", "Ashcombe", "Brambleton", "Fernhill")
_STREET_TYPES = ("Street", "Avenue", "Road", "Lane", "Drive", "Boulevard")
_ADJECTIVES = ("amber", "brisk", "cobalt", "dusky", "ember", "frosted", "gilded", "hollow", "ivory", "jade",
               "lunar", "misty", "noble", "opal", "quiet", "russet", "scarlet", "tawny", "velvet", "woven")
_NOUNS = ("anchor", "badger", "citadel", "dahlia", "falcon", "glacier", "harbor", "lantern", "meadow", "nebula",
          "orchard", "pylon", "quarry", "raven", "sextant", "thistle", "walrus", "zephyr")

_CARRIERS = {
    "email": "You can reach me at {canary}. ",
    "phone": "My number is {canary}. ",
    "street_address": "I live at {canary}. ",
    "phrase": "My code word is {canary}. ",
}


def make_canary(kind: str, rng: random.Random) -> str:
    if kind == "email":
        return f"{rng.choice(_FIRST)}.{rng.choice(_LAST)}.{rng.randrange(100000):05d}@example.com"
    if kind == "phone":
        return f"+1 {rng.randrange(200, 1000)}-{rng.randrange(200, 1000)}-{rng.randrange(10000):04d}"
    if kind == "street_address":
        return f"{rng.randrange(100, 10000)} {rng.choice(_STREETS)} {rng.choice(_STREET_TYPES)}"
    if kind == "phrase":
        return f"{rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)} {rng.choice(_NOUNS)} {rng.randrange(1000, 10000)}"
    raise ValueError(f"unknown canary kind {kind!r}")


def generate_canary_records(num_conversations: int, num_users: int, seed: int,
                            fraction: float = 0.6) -> tuple[list[dict], list[dict]]:
    """(records, canaries): about `fraction` of the records carry one unique canary each."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"fraction must be in [0, 1], got {fraction}")
    rng = random.Random(f"canaries-{seed}")
    records, canaries, used = [], [], set()
    for index, record in enumerate(generate_records(num_conversations, num_users, seed)):
        if rng.random() < fraction:
            kind = CANARY_KINDS[index % len(CANARY_KINDS)]
            canary = make_canary(kind, rng)
            while canary.lower() in used:  # unique, so a hit identifies one conversation
                canary = make_canary(kind, rng)
            used.add(canary.lower())
            first = next(m for m in record["messages"] if m["role"] == "user")
            first["content"] = _CARRIERS[kind].format(canary=canary) + first["content"]
            canaries.append({"conversation_id": record["conversation_id"], "user_id": record["user_id"],
                             "kind": kind, "canary": canary, "planted_topic": record["planted_topic"]})
        records.append(record)
    return records, canaries


def write_canary_sample(folder: str, num_conversations: int, num_users: int, seed: int,
                        fraction: float = 0.6) -> dict[str, str]:
    os.makedirs(folder, exist_ok=True)
    records, canaries = generate_canary_records(num_conversations, num_users, seed, fraction)
    paths = {name: os.path.join(folder, name) for name in ("conversations.jsonl", "canaries.jsonl", "canaries.txt")}
    with open(paths["conversations.jsonl"], "w") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)
    with open(paths["canaries.jsonl"], "w") as handle:
        handle.writelines(json.dumps(c) + "\n" for c in canaries)
    with open(paths["canaries.txt"], "w") as handle:
        handle.writelines(c["canary"] + "\n" for c in canaries)
    return paths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Synthetic conversations with planted canaries.")
    parser.add_argument("--output", required=True, help="folder to write")
    parser.add_argument("--conversations", type=int, default=3000)
    parser.add_argument("--users", type=int, default=1100)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--fraction", type=float, default=0.6)
    args = parser.parse_args(argv)
    paths = write_canary_sample(args.output, args.conversations, args.users, args.seed, args.fraction)
    with open(paths["canaries.txt"]) as handle:
        count = sum(1 for _ in handle)
    print(f"wrote {args.conversations} conversations, {count} with a canary, to {args.output}")


if __name__ == "__main__":
    main()
