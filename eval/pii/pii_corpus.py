"""A seeded, labelled set of chatbot requests for measuring pseudonymization (eval/pii/pii_recall.py).

Made-up requests of the kinds real users send (e-mails, letters, CVs, support tickets, medical and
legal questions, role-play, meeting notes, questions about public figures), filled with:
- private names: first and last names of 19 Faker locales (Western, South Asian, West and
  East African, Turkish, Uzbek, Indonesian, romanized Japanese and Chinese, Latin American), plus
  first names that are also common English words ("Rose", "Grant", "Will", "Bill", "Page", ...);
  some texts are typed in lower case;
- private e-mail addresses and phone numbers;
- "keep" entities the request is about: public figures, topic-bearing organisations and products,
  places. Replacing them would take the topic away from the model.

Every entity is labelled with its character span. Templates and names are split in two ("tune"
and "heldout", by template index and by a hash of the name) and each example draws only from its
own split's templates and names: tune rules on "tune", report on "heldout", which has templates
and names the rules were not written against. The same seed gives the same examples (Faker is
pinned in requirements.txt). Everything here is invented; no real data.

    python -m eval.pii.pii_corpus --split heldout --examples 5 --output -
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import random
import re
import sys
from dataclasses import dataclass

SPLITS = ("tune", "heldout")
PRIVATE_KINDS = ("PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER")
KEEP_KINDS = ("PUBLIC_PERSON", "ORG", "PRODUCT", "PLACE")

# Faker locales whose names are in Latin script; ja_JP and zh_CN through their romanized lists.
NAME_LOCALES = ("en_US", "en_GB", "en_IN", "en_PK", "yo_NG", "ig_NG", "ha_NG", "zu_ZA", "tw_GH", "sw",
                "id_ID", "es_MX", "pt_BR", "fr_FR", "pl_PL", "tr_TR", "uz_UZ", "ja_JP", "zh_CN")
ROMANIZED_LOCALES = ("ja_JP", "zh_CN")
# First names that are also ordinary English words: the hard case for NER and for gazetteers.
WORD_FIRST_NAMES = {
    "F": ("Rose", "Summer", "Page", "Hope", "Faith", "Joy", "Dawn", "April", "June", "May", "Ivy", "Holly",
          "Amber", "Crystal", "Grace", "Sandy", "Penny", "Autumn", "Violet", "Sunny", "Destiny", "Honey"),
    "M": ("Grant", "Will", "Bill", "Mark", "Frank", "Jack", "Ray", "Drew", "Chase", "Hunter", "Rich", "Dean",
          "Miles", "Glen", "Pat", "Rob", "Sterling", "Forrest", "Wade", "Cliff", "Reed", "Bishop"),
}
PUBLIC_FIGURES = (
    "Albert Einstein", "Marie Curie", "Nelson Mandela", "Taylor Swift", "Elon Musk", "Narendra Modi",
    "Xi Jinping", "Shah Rukh Khan", "Haruki Murakami", "Chimamanda Ngozi Adichie", "Frida Kahlo",
    "Lionel Messi", "Serena Williams", "Bill Gates", "Mark Zuckerberg", "Will Smith", "Barack Obama",
    "Angela Merkel", "Jacinda Ardern", "Malala Yousafzai", "Gabriel Garcia Marquez", "Toni Morrison",
    "Isaac Newton", "Ada Lovelace", "Alan Turing", "Jane Austen", "William Shakespeare", "Leo Tolstoy",
    "Mahatma Gandhi", "Cristiano Ronaldo", "Oprah Winfrey", "Steve Jobs", "Jeff Bezos", "Sundar Pichai",
    "Satya Nadella", "Greta Thunberg", "Kamala Harris", "Vladimir Putin", "Emmanuel Macron",
    "Akira Kurosawa", "Hayao Miyazaki", "Yuval Noah Harari", "Noam Chomsky", "Carl Sagan",
    "Stephen Hawking", "Charles Darwin", "Sigmund Freud", "Karl Marx", "Wangari Maathai", "Fela Kuti",
    "Rabindranath Tagore", "Jack Ma", "Lee Kuan Yew", "Ngozi Okonjo-Iweala", "Pope Francis",
    "Dolly Parton", "Summer Walker", "Grace Hopper", "Mark Twain", "Virginia Woolf", "Kofi Annan",
    "Bruce Lee", "Simone Biles", "Usain Bolt", "Rosa Parks", "Martin Luther King", "Frank Sinatra",
)
ORGANISATIONS = ("Google", "Microsoft", "Amazon", "Tesla", "Spotify", "NASA", "the WHO", "Toyota", "Netflix",
                 "the United Nations", "Samsung", "Airbnb", "Uber", "IKEA", "Goldman Sachs", "Deloitte",
                 "the BBC", "Harvard", "Stanford", "MIT", "the NHS", "Infosys", "Alibaba", "Shopify")
PRODUCTS = ("Excel", "Python", "Kubernetes", "iPhone", "Photoshop", "Salesforce", "Jira", "WordPress",
            "Zoom", "Slack", "PowerPoint", "Docker", "React", "QuickBooks", "Android", "Tableau", "Figma",
            "PlayStation", "Notion", "SAP")
PLACES = ("Paris", "Lagos", "Mumbai", "Japan", "Brazil", "Nigeria", "Toronto", "Berlin", "Nairobi", "Texas",
          "Seoul", "Istanbul", "Mexico City", "Jakarta", "London", "Chicago", "Cape Town", "Manila", "Dubai",
          "Vietnam", "Kenya", "Sydney", "Madrid", "Karachi")
LOWER_CASE_SHARE = 0.1
EMAIL_DOMAINS = ("gmail.com", "outlook.com", "yahoo.com", "proton.me", "company.io", "mail.co.uk")

# Slots: {pN} a private person's full name, {pNf} first name, {pNl} last name ({pNf} alone when the
# text names someone by first name only), {pub}/{pub2} public figures, {org}, {product}, {place},
# {email} (of p1), {phone}. A template ending in "|lower" is always typed in lower case, any other
# one in LOWER_CASE_SHARE of its texts.
TEMPLATES = (
    "Write an email to my colleague {p1} asking for the {org} report by Friday.",
    "Can you draft a reply to {p1}? She wants to move our meeting in {place} to Tuesday. Sign it from me, {p2f}.",
    "Dear {p1f},\n\nThank you for your help with the {product} migration last week.\n\nBest,\n{p2}\n\nMake this more formal.",
    "Fix the grammar: Hi {p1f}, just checking in about the invoice, I sent it to {email}. Cheers, {p2f}",
    "Write a recommendation letter for my student {p1}, who is applying to a master's program in {place}.",
    "Help me write a condolence card to {p1f} {p1l}'s family; his father passed away last month.",
    "Here is my CV, please improve it:\n{p1}\n{email} | {phone}\nSoftware engineer at {org}, {place}.",
    "My name is {p1} and I'm applying for a data analyst role at {org}. Write a cover letter.",
    "Customer {p1} (account email {email}) reports that {product} crashes on startup. Summarize the ticket.",
    "Ticket 4821 from {p1}: cannot log in to {product} since the update. Draft a polite response.",
    "My mother, {p1}, was diagnosed with type 2 diabetes. What diet changes should she make?",
    "I'm {p1f}, 34, and I've had migraines for weeks. My doctor, Dr. {p2l}, suggested triptans. Are they safe?",
    "My landlord {p1} refuses to return my deposit in {place}. What are my options?",
    "Draft a cease and desist letter from me, {p1}, to {p2} about using my photos without permission.",
    "Let's role-play: you are my manager {p1f} and I'm asking for a raise. Start the conversation.",
    "Pretend to be {pub} and tell me what advice you would give a young scientist.",
    "What were {pub}'s main achievements, and how did they influence {place}?",
    "Summarize the life of {pub} in five bullet points.",
    "Write a short poem in the style of {pub} about the sea.",
    "Compare the leadership styles of {pub} and {pub2}.",
    "Who is {pub} and why are they famous?",
    "My friend {p1f} says {pub} never won a major award. Is that true?",
    "{p1f}'s birthday is next week; suggest a gift under $50 I can order from {org}.",
    "how do i tell my boss {p1f} that i need two weeks off in {place}|lower",
    "Translate to Spanish: 'Hello {p1f}, the package for {p2} arrived at the {place} office.'",
    "Make a summer schedule for my kids {p1f} and {p2f} while we are in {place}.",
    "Write a wedding toast for my brother {p1f} and his fiancee {p2}.",
    "{p1} and I are co-founders of a startup built on {product}. Write our two-minute pitch.",
    "Please review this message before I send it to {p1f}: 'I can't make it to the {org} interview tomorrow.'",
    "Meeting notes. Attendees: {p1}, {p2}, {p3}. Action items: {p2f} to update the {product} dashboard.",
    "Reply to this text: 'Hey, it's {p1f}. Are we still on for dinner when you're back from {place}?'",
    "write a text to my wife {p1f} saying i'll be late, the {product} deploy broke|lower",
    "Rewrite this thank-you note: Thanks so much {p1f}, the flowers were lovely! Love, {p2f}",
    "Generate a performance review for {p1}, a junior developer on my team who works on {product}.",
    "I need a reference letter. I supervised {p1} at {org} for two years. She was excellent.",
    "What is {pub}'s most famous quote and what did it mean?",
    "Is {org} a good company to work for? My cousin {p1f} got an offer there.",
    "Sign this complaint with my name and number: {p1}, {phone}.",
    "According to {pub}, what makes a good leader?",
    "my neighbour {p1f} keeps parking in front of my garage, how do i ask him nicely to stop|lower",
    "Proofread: 'Mr. {p1l} will present the {product} results; please send questions to {email}.'",
    "Write a LinkedIn post congratulating {p1} on her promotion at {org}.",
    "Explain the theories of {pub} to a ten-year-old.",
    "I'm writing a eulogy for my grandfather {p1}. He loved fishing and {place}. Help me start.",
    "Draft a message to our tenant {p1f} {p1l} about the rent increase in {place}.",
    "What would {pub} think about social media?",
    "Can you help me plan a surprise party for {p1f}? Her sister {p2f} will bring the cake.",
    "Translate this for my coworker {p1}: 'The {product} license expires on Monday.'",
)


# More request shapes, all in the tune split (written after a first held-out measurement, so the
# held-out templates above stay unseen by the rules).
EXTRA_TUNE_TEMPLATES = (
    "From: {p1} <{email}>\nTo: {p2}\nSubject: Q3 budget\n\nPlease summarize this email thread.",
    "Can you settle an argument between {p1f} and {p2f}? They disagree about whether {place} is in Africa.",
    "{p1f} told me the {product} license is per seat. Is that right?",
    "Schedule a call with {p1} and {p2l} next Tuesday about the {org} contract.",
    "i had a fight with {p1f} yesterday and she won't talk to me, what should i do|lower",
    "Write a limerick about my dog and my roommate {p1f}.",
    "The patient, {p1}, 67, presents with chest pain. Draft a referral letter to cardiology.",
    "I'm a teacher. {p1f} keeps disrupting class and {p2f} is always late. How do I handle it?",
    "Roleplay as {pub} giving a commencement speech at {org}.",
    "cc {p1f} on this: the {product} outage is resolved.",
    "Is it legal for {p1}, my employer, to withhold my last paycheck in {place}?",
    "Draft an invitation: {p1f} and {p2f} {p1l} request the pleasure of your company.",
    "Summarize {pub}'s views on education in three sentences.",
    "How should I respond when {p1f} from accounting keeps emailing me at night?",
    "Convert this to a table: {p1}, {phone}; {p2}, {place}.",
    "What is the best way to learn {product} if I admire how {pub} built things?",
    "Write a resignation letter to {p1}, effective two weeks from today.",
    "Help me name a character in my novel after my grandmother, {p1f}.",
    "— {p1f}\nRewrite the message above so it sounds friendlier.",
    "Did {pub} ever visit {place}?",
)


@dataclass(frozen=True)
class Entity:
    kind: str
    value: str
    start: int
    end: int

    @property
    def keep(self) -> bool:
        return self.kind in KEEP_KINDS


def _split_of(value: str) -> str:
    # A stable split by value: the same name is in the same split in every run and every template.
    return SPLITS[hashlib.sha256(value.lower().encode()).digest()[0] % 2]


def template_split(index: int) -> str:
    return SPLITS[index % 2]


@functools.lru_cache(maxsize=4)
def name_pools(seed: int = 0, per_locale: int = 40) -> dict[str, dict[str, list]]:
    """{split: {"first": [(name, gender)], "last": [name]}}: each name in one split only (cached:
    do not modify)."""
    from faker import Faker
    first: dict[str, str] = {}
    last: set[str] = set()
    for locale in NAME_LOCALES:
        fake = Faker(locale)
        fake.seed_instance(seed)
        romanized = locale in ROMANIZED_LOCALES
        for _ in range(per_locale):
            for gender, method in (("M", "first_romanized_name" if romanized else "first_name_male"),
                                   ("F", "first_romanized_name" if romanized else "first_name_female")):
                name = getattr(fake, method)()
                if re.fullmatch(r"[^\W\d_]+(?:[-'][^\W\d_]+)?", name):  # one word, letters only
                    first.setdefault(name, gender)
            name = fake.last_romanized_name() if romanized else fake.last_name()
            if re.fullmatch(r"[^\W\d_]+(?:[-'][^\W\d_]+)?", name):
                last.add(name)
    for gender, names in WORD_FIRST_NAMES.items():
        for name in names:
            first[name] = gender
    pools = {split: {"first": [], "last": []} for split in SPLITS}
    for name in sorted(first):
        pools[_split_of(name)]["first"].append((name, first[name]))
    for name in sorted(last):
        pools[_split_of(name)]["last"].append(name)
    return pools


def _fill(template: str, rng: random.Random, pools: dict, publics: list[str]) -> tuple[str, list[Entity]]:
    # Some people type everything in lower case, names included.
    lower = template.endswith("|lower") or rng.random() < LOWER_CASE_SHARE
    template = template.removesuffix("|lower")
    people: dict[str, tuple[str, str]] = {}
    # Word-like first names are drawn often enough to matter (a third of the time), not at their
    # tiny share of the pool.
    words = [n for n in pools["first"] if n[0] in {w for ws in WORD_FIRST_NAMES.values() for w in ws}]
    others = [n for n in pools["first"] if n not in words]

    def person(key: str) -> tuple[str, str]:
        if key not in people:
            first_name = rng.choice(words if words and rng.random() < 1 / 3 else others)[0]
            people[key] = (first_name, rng.choice(pools["last"]))
        return people[key]

    chosen_publics = rng.sample(publics, 2)
    text, entities = "", []
    for piece in re.split(r"(\{[a-z0-9]+\})", template):
        slot = piece[1:-1] if piece.startswith("{") and piece.endswith("}") else None
        if slot is None:
            text += piece
            continue
        match = re.fullmatch(r"p(\d)([fl]?)", slot)
        if match:
            first_name, last_name = person(match.group(1))
            value = {"": f"{first_name} {last_name}", "f": first_name, "l": last_name}[match.group(2)]
            kind = "PERSON"
        elif slot in ("pub", "pub2"):
            value, kind = chosen_publics[slot == "pub2"], "PUBLIC_PERSON"
        elif slot == "org":
            value, kind = rng.choice(ORGANISATIONS), "ORG"
        elif slot == "product":
            value, kind = rng.choice(PRODUCTS), "PRODUCT"
        elif slot == "place":
            value, kind = rng.choice(PLACES), "PLACE"
        elif slot == "email":
            first_name, last_name = person("1")
            local = rng.choice((f"{first_name}.{last_name}", f"{first_name[0]}{last_name}",
                                f"{first_name}{rng.randrange(10, 99)}"))
            value, kind = f"{local.lower()}@{rng.choice(EMAIL_DOMAINS)}", "EMAIL_ADDRESS"
        elif slot == "phone":
            value = rng.choice((f"+1 {rng.randrange(201, 989)}-{rng.randrange(200, 999)}-{rng.randrange(10000):04d}",
                                f"07{rng.randrange(100, 999)} {rng.randrange(100000, 999999)}",
                                f"+91 {rng.randrange(70000, 99999)} {rng.randrange(10000, 99999)}"))
            kind = "PHONE_NUMBER"
        else:
            raise ValueError(f"unknown slot {slot!r} in template {template!r}")
        if kind.endswith("ORG") and value.startswith("the "):
            text += "the "
            value = value[4:]
        if lower:
            value = value.lower()
        entities.append(Entity(kind, value, len(text), len(text) + len(value)))
        text += value
    if lower:
        text = text.lower()
    return text, entities


def generate(split: str, examples: int, seed: int = 7) -> list[dict]:
    """`examples` labelled requests of one split: {"id", "split", "template", "text", "entities"}."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    pools = name_pools()[split]
    publics = [p for p in PUBLIC_FIGURES if _split_of(p) == split]
    templates = [(i, t) for i, t in enumerate(TEMPLATES) if template_split(i) == split]
    if split == "tune":
        templates += [(len(TEMPLATES) + i, t) for i, t in enumerate(EXTRA_TUNE_TEMPLATES)]
    rng = random.Random(f"{seed}:{split}")
    out = []
    for n in range(examples):
        index, template = templates[n % len(templates)]
        text, entities = _fill(template, rng, pools, publics)
        out.append({"id": f"{split}-{n}", "split": split, "template": index, "text": text,
                    "entities": [e.__dict__ for e in entities]})
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=SPLITS, default="heldout")
    parser.add_argument("--examples", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output", default="-", help="JSONL path, or - for stdout")
    args = parser.parse_args(argv)
    rows = generate(args.split, args.examples, args.seed)
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
