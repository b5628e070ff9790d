"""Generates a stream of nightly chatbot logs with planted trends, for evaluating nightly runs.

    python -m beam_jobs.generate_stream --output stream --start 2026-10-01 --nights 60 \
        --conversations_per_night 1000 --users 3000 --seed 7

writes stream/dt=YYYY-MM-DD/conversations.jsonl for each night (what the job reads with
`--input 'stream/dt={date}/*.jsonl' --date YYYY-MM-DD`) and stream/planted.json, the private
ground truth (never read by the job): each night's planted topic counts and the planted trends.

Conversations are made as synthetic.sample makes them (the same topics, turns and ticket
codes, and a `planted_topic` field the job ignores); conversation ids are unique across nights.
Owners come from one pool of `--users` recurring users with heavy-tailed activity: each user is
active on a night with a probability of their own (Pareto-distributed weights, so a few users are
there almost every night and most come back now and then), and a conversation about a topic goes,
three times in four, to an active user who favours that topic (two favourites each, kept for the
whole stream: preferences are sticky).

Each planted topic has an expected count per night: `conversations_per_night` / 25 times its trend's
multiplier, and its count is Poisson with that mean, independently per topic and night. The trends:
- emerging (default `video games`): absent before night `--emerging_night` (0-based), then 1/3, 2/3
  and from the third night on the full expected count (`--ramp_nights`): a steady topic's, or
  `--emerging_share` of the night's expected conversations when given (e.g. 0.03);
- fading (default `tenant and legal questions`): the full count before `--fading_night`, then down
  by 1/`--fade_nights` a night to none;
- weekly (default `travel planning`): `--weekly_factor` times the count on `--weekday` (Saturday);
- growing (none by default; `--growing_topic`): a slow riser, the full count before `--growing_night`, then
  up by the same factor each night to `--growing_factor` times it after `--growing_nights` nights (2 over 21:
  a topic that doubles over three weeks, +3.4% a night, which no single night separates from the noise), and
  there after;
- steady: every other topic, a constant expected count (Poisson variation only).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import random
from collections.abc import Callable, Iterator

import numpy as np

from synthetic.sample import conversation_messages, ticket_code, user_activity_weights
from synthetic.topics import PLANTED_TOPICS

TREND_KINDS = ("emerging", "fading", "weekly", "growing", "steady")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
PLANTED_FILE = "planted.json"
NIGHT_FILE = "conversations.jsonl"
SOURCE = "urania-beam synthetic stream"
# A conversation goes to an active user who favours its topic with this probability (else to any
# active user), as in synthetic.sample.
FAVOURITE_SHARE = 0.75
FAVOURITES_PER_USER = 2
# How many conversations a very active user has on one night is capped through its owner weight
# (a Pareto weight of hundreds would otherwise hand one user a large part of a night).
MAX_NIGHTLY_WEIGHT = 5.0
# Expected conversations per active user and night (sets how many users are active a night).
CONVERSATIONS_PER_ACTIVE_USER = 1.6
MAX_ACTIVITY = 0.9  # no user is active on every night for sure


@dataclasses.dataclass(frozen=True)
class Trend:
    """How one planted topic's expected count moves over the nights."""

    topic: str
    kind: str
    start_night: int = 0  # emerging: first night with any; fading: first night below full; growing: first above
    ramp_nights: int = 0  # emerging: nights to reach the full count; fading: nights to reach none; growing: to `factor`
    weekday: int | None = None  # weekly: 0 Monday ... 6 Sunday
    factor: float = 1.0  # weekly: the multiplier on that weekday; emerging: at its full count; growing: at its end

    def __post_init__(self):
        if self.kind not in TREND_KINDS:
            raise ValueError(f"trend kind must be one of {TREND_KINDS}, got {self.kind!r}")
        if self.kind in ("emerging", "fading", "growing") and self.ramp_nights < 1:
            raise ValueError(f"{self.kind} trend of {self.topic!r} needs ramp_nights >= 1")
        if not self.factor > 0:
            raise ValueError(f"trend of {self.topic!r} needs a factor > 0")
        if self.kind == "weekly" and self.weekday not in range(7):
            raise ValueError(f"weekly trend of {self.topic!r} needs a weekday in 0..6")

    def multiplier(self, night: int, date: dt.date) -> float:
        """The topic's expected count on `night` (0-based; on `date`) relative to its steady count."""
        if self.kind == "emerging":
            return 0.0 if night < self.start_night else self.factor * min(
                1.0, (night - self.start_night + 1) / self.ramp_nights)
        if self.kind == "fading":
            return 1.0 if night < self.start_night else max(0.0, 1 - (night - self.start_night + 1) / self.ramp_nights)
        if self.kind == "weekly":
            return self.factor if date.weekday() == self.weekday else 1.0
        if self.kind == "growing":  # geometric: the same relative step every night
            return 1.0 if night < self.start_night else self.factor ** min(
                1.0, (night - self.start_night + 1) / self.ramp_nights)
        return 1.0

    def to_json(self, start: dt.date) -> dict:
        data = {"topic": self.topic, "kind": self.kind, "start_night": self.start_night,
                "start_date": (start + dt.timedelta(days=self.start_night)).isoformat()}
        if self.kind == "emerging":
            data.update(full_night=self.start_night + self.ramp_nights - 1, factor=self.factor)
        elif self.kind == "fading":
            data["gone_night"] = self.start_night + self.ramp_nights - 1
            data["gone_date"] = (start + dt.timedelta(days=data["gone_night"])).isoformat()
        elif self.kind == "weekly":
            data.update(weekday=WEEKDAYS[self.weekday], factor=self.factor)
        elif self.kind == "growing":
            data.update(full_night=self.start_night + self.ramp_nights - 1, factor=self.factor)
        return data


@dataclasses.dataclass(frozen=True)
class StreamSpec:
    """A generated stream: its nights, users and seed, and the planted trends' topics and timing (the flags
    of add_stream_arguments; planted.json records it)."""

    start: dt.date = dt.date(2026, 10, 1)
    nights: int = 60
    conversations_per_night: int = 1000
    users: int = 3000
    seed: int = 7
    emerging_topic: str = "video games"
    emerging_night: int = 20
    ramp_nights: int = 3
    emerging_share: float | None = None  # at its full count; None: a steady topic's (1 / the planted topics)
    fading_topic: str = "tenant and legal questions"
    fading_night: int = 35
    fade_nights: int = 7
    weekly_topic: str = "travel planning"
    weekday: int = 5  # Saturday
    weekly_factor: float = 4.0
    growing_topic: str | None = None  # none by default: the streams measured before it keep their trends
    growing_night: int = 28  # four weeks of history first: the weekly status's full baseline
    growing_nights: int = 21
    growing_factor: float = 2.0

    def __post_init__(self):
        if self.nights < 1 or self.users < 1 or self.conversations_per_night < 1:
            raise ValueError("need at least one night, one user and one conversation a night")
        names = {t.name for t in PLANTED_TOPICS}
        special = tuple(t for t in (self.emerging_topic, self.fading_topic, self.weekly_topic, self.growing_topic)
                        if t is not None)
        unknown = [t for t in special if t not in names]
        if unknown:
            raise ValueError(f"unknown planted topic(s) {unknown}; known: {sorted(names)}")
        if len(set(special)) != len(special):
            raise ValueError(f"the emerging, fading, weekly and growing topics must differ, got {special}")
        if self.growing_topic is not None and not (self.growing_nights >= 1 and self.growing_factor > 0):
            raise ValueError(f"the growing topic needs --growing_nights >= 1 and --growing_factor > 0, got "
                             f"{self.growing_nights} and {self.growing_factor}")
        if self.emerging_share is not None and not 0 < self.emerging_share < 1:
            raise ValueError(f"the emerging share must be in (0, 1), got {self.emerging_share}")

    def trends(self) -> list[Trend]:
        """One trend per planted topic, in PLANTED_TOPICS order."""
        special = {
            self.emerging_topic: Trend(self.emerging_topic, "emerging", self.emerging_night, self.ramp_nights,
                                       factor=1.0 if self.emerging_share is None
                                       else self.emerging_share * len(PLANTED_TOPICS)),
            self.fading_topic: Trend(self.fading_topic, "fading", self.fading_night, self.fade_nights),
            self.weekly_topic: Trend(self.weekly_topic, "weekly", weekday=self.weekday, factor=self.weekly_factor),
        }
        if self.growing_topic is not None:
            special[self.growing_topic] = Trend(self.growing_topic, "growing", self.growing_night, self.growing_nights,
                                                factor=self.growing_factor)
        return [special.get(t.name, Trend(t.name, "steady")) for t in PLANTED_TOPICS]

    def date(self, night: int) -> dt.date:
        return self.start + dt.timedelta(days=night)

    @property
    def steady_rate(self) -> float:
        """Expected conversations of one topic a night at multiplier 1 (equal shares)."""
        return self.conversations_per_night / len(PLANTED_TOPICS)


@dataclasses.dataclass(frozen=True)
class UserPool:
    """The recurring users: ids, Pareto activity weights, nightly activity probabilities, favourites."""

    ids: tuple[str, ...]
    weights: np.ndarray
    activity: np.ndarray
    favourites: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, spec: StreamSpec) -> "UserPool":
        rng = random.Random(spec.seed)
        ids = tuple(f"user-{i:06d}" for i in range(spec.users))
        weights = np.array(user_activity_weights(spec.users, rng))
        favourites = tuple(tuple(rng.sample(range(len(PLANTED_TOPICS)), k=FAVOURITES_PER_USER)) for _ in ids)
        target = min(0.5 * spec.users, spec.conversations_per_night / CONVERSATIONS_PER_ACTIVE_USER)
        return cls(ids, weights, _activity(weights, target), favourites)


def _activity(weights: np.ndarray, expected_active: float) -> np.ndarray:
    """Per-user nightly activity probabilities min(MAX_ACTIVITY, s * weight), with s such that the
    expected number of active users a night is `expected_active` (bisection)."""
    low, high = 0.0, 1.0
    while np.minimum(MAX_ACTIVITY, high * weights).sum() < expected_active and high < 1e9:
        high *= 2
    for _ in range(60):
        mid = (low + high) / 2
        if np.minimum(MAX_ACTIVITY, mid * weights).sum() < expected_active:
            low = mid
        else:
            high = mid
    return np.minimum(MAX_ACTIVITY, high * weights)


def generate_night(spec: StreamSpec, pool: UserPool, night: int) -> tuple[list[dict], dict]:
    """(the night's records, sorted by timestamp; its ground-truth summary). Depends only on the
    spec's seed and `night`, so any night can be made without the ones before it."""
    date = spec.date(night)
    counts_rng = np.random.default_rng([spec.seed, night])
    text_rng = random.Random(f"{spec.seed}:{night}")
    active = np.flatnonzero(counts_rng.random(len(pool.ids)) < pool.activity)
    if active.size == 0:
        active = np.array([int(counts_rng.integers(len(pool.ids)))])
    owner_weights = np.minimum(pool.weights[active], MAX_NIGHTLY_WEIGHT)
    trends = spec.trends()
    expected = {t.topic: spec.steady_rate * t.multiplier(night, date) for t in trends}
    counts = {topic: int(counts_rng.poisson(rate)) for topic, rate in expected.items()}
    planned = []
    for index, topic in enumerate(PLANTED_TOPICS):
        n = counts[topic.name]
        if not n:
            continue
        fans = np.array([i for i, user in enumerate(active) if index in pool.favourites[user]], dtype=np.int64)
        for _ in range(n):
            if fans.size and counts_rng.random() < FAVOURITE_SHARE:
                p = owner_weights[fans] / owner_weights[fans].sum()
                owner = active[fans[counts_rng.choice(fans.size, p=p)]]
            else:
                owner = active[counts_rng.choice(active.size, p=owner_weights / owner_weights.sum())]
            planned.append((int(text_rng.randrange(86400)), topic, int(owner)))
    planned.sort(key=lambda item: item[0])
    midnight = dt.datetime.combine(date, dt.time(), tzinfo=dt.timezone.utc)
    records = []
    for i, (seconds, topic, owner) in enumerate(planned):
        timestamp = midnight + dt.timedelta(seconds=seconds)
        records.append({
            "conversation_id": f"conv-{spec.seed}-{date:%Y%m%d}-{i:06d}",
            "user_id": pool.ids[owner],
            "timestamp": timestamp.isoformat().replace("+00:00", "Z"),
            "messages": conversation_messages(topic, text_rng, ticket_code(text_rng)),
            "source": SOURCE,
            "planted_topic": topic.name,
        })
    summary = {"night": night, "date": date.isoformat(), "weekday": WEEKDAYS[date.weekday()],
               "conversations": len(records), "active_users": int(active.size),
               "users_with_conversations": len({r["user_id"] for r in records}),
               "counts": counts, "expected": {k: round(v, 3) for k, v in expected.items()}}
    return records, summary


def generate_stream(spec: StreamSpec) -> Iterator[tuple[list[dict], dict]]:
    """(records, summary) for every night in order."""
    pool = UserPool.of(spec)
    for night in range(spec.nights):
        yield generate_night(spec, pool, night)


def night_dir(output: str, date: str) -> str:
    return os.path.join(output, f"dt={date}")


def night_path(output: str, date: str) -> str:
    """Where write_stream puts one night's conversations."""
    return os.path.join(night_dir(output, date), NIGHT_FILE)


def spec_json(spec: StreamSpec) -> dict:
    """The spec as planted.json records it."""
    return {**dataclasses.asdict(spec), "start": spec.start.isoformat(), "weekday": WEEKDAYS[spec.weekday]}


def planted_json(spec: StreamSpec, summaries: list[dict]) -> dict:
    return {
        "note": "private ground truth of a generated stream (beam_jobs.generate_stream); never read by the job",
        "spec": spec_json(spec),
        "dates": [s["date"] for s in summaries],
        "topics": [t.name for t in PLANTED_TOPICS],
        "trends": [t.to_json(spec.start) for t in spec.trends()],
        "nights": summaries,
    }


def write_stream(output: str, spec: StreamSpec) -> dict:
    """Writes every night's JSON Lines file and planted.json under `output`; returns planted.json's content."""
    summaries = []
    for records, summary in generate_stream(spec):
        write_night(output, summary["date"], records)
        summaries.append(summary)
    planted = planted_json(spec, summaries)
    write_planted(output, planted)
    return planted


def write_night(output: str, date: str, records: list[dict]) -> None:
    """Writes one night's records as JSON Lines at night_path, through a temporary file so that a reader
    never finds half a night (eval/utility/real_stream.py writes its nights with it too)."""
    path = night_path(output, date)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as out:
        for record in records:
            out.write(json.dumps(record).encode() + b"\n")
    os.replace(path + ".tmp", path)


def write_planted(output: str, planted: dict) -> None:
    """Writes a stream's planted.json under `output`, through a temporary file."""
    path = os.path.join(output, PLANTED_FILE)
    with open(path + ".tmp", "w") as out:
        json.dump(planted, out, indent=1)
    os.replace(path + ".tmp", path)


def load_planted(output: str) -> dict:
    with open(os.path.join(output, PLANTED_FILE)) as handle:
        return json.load(handle)


def planted_or_written(output: str, spec: dict, write: Callable[[], dict]) -> dict:
    """planted.json of the stream in `output` when it records `spec` and every night's file is there (a
    stream is reused while its spec is the same); else `write()`'s, which writes the stream there."""
    try:
        planted = load_planted(output)
    except (OSError, ValueError):
        planted = None
    if (planted is not None and planted.get("spec") == spec
            and all(os.path.exists(night_path(output, date)) for date in planted["dates"])):
        return planted
    return write()


def _weekday(value: str) -> int:
    value = value.lower()
    if value not in WEEKDAYS:
        raise argparse.ArgumentTypeError(f"weekday must be one of {WEEKDAYS}")
    return WEEKDAYS.index(value)


def add_stream_arguments(parser: argparse.ArgumentParser) -> None:
    """The stream's flags (also taken by eval/utility/nightly_stream.py)."""
    defaults = StreamSpec()
    parser.add_argument("--start", type=dt.date.fromisoformat, default=defaults.start, help="first night's date")
    parser.add_argument("--nights", type=int, default=defaults.nights)
    parser.add_argument("--conversations_per_night", type=int, default=defaults.conversations_per_night,
                        help="expected conversations a night with every topic at its steady count")
    parser.add_argument("--users", type=int, default=defaults.users, help="recurring users in the pool")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--emerging_topic", default=defaults.emerging_topic)
    parser.add_argument("--emerging_night", type=int, default=defaults.emerging_night,
                        help="first night (0-based) with the emerging topic")
    parser.add_argument("--ramp_nights", type=int, default=defaults.ramp_nights)
    parser.add_argument("--emerging_share", type=float, default=defaults.emerging_share,
                        help="the emerging topic's share of a night at its full count (default: a steady topic's)")
    parser.add_argument("--fading_topic", default=defaults.fading_topic)
    parser.add_argument("--fading_night", type=int, default=defaults.fading_night,
                        help="first night (0-based) the fading topic is below its steady count")
    parser.add_argument("--fade_nights", type=int, default=defaults.fade_nights)
    parser.add_argument("--weekly_topic", default=defaults.weekly_topic)
    parser.add_argument("--weekday", type=_weekday, default=defaults.weekday)
    parser.add_argument("--weekly_factor", type=float, default=defaults.weekly_factor)
    parser.add_argument("--growing_topic", default=defaults.growing_topic,
                        help="a topic that grows slowly (default: none), e.g. gardening")
    parser.add_argument("--growing_night", type=int, default=defaults.growing_night,
                        help="first night (0-based) the growing topic is above its steady count")
    parser.add_argument("--growing_nights", type=int, default=defaults.growing_nights,
                        help="nights the growing topic takes to reach --growing_factor times its steady count")
    parser.add_argument("--growing_factor", type=float, default=defaults.growing_factor)


def spec_from_args(args: argparse.Namespace) -> StreamSpec:
    return StreamSpec(**{field.name: getattr(args, field.name) for field in dataclasses.fields(StreamSpec)})
