"""Token-level private decoding (the paper "Differentially Private Summarization with Large Language
Models"): the mechanism's sampling, sensitivity, noise and accounting. The language model is in
backends/token_decoder.py; this module never imports torch.

Per released topic, a sample of members is decoded together. At each step t, each member i's final hidden
state h_i,t = f([x_i; y_<t]) (after the model's last norm, so the LM head is one linear map) is clipped to
L2 norm C (a state holding an inf or NaN counts as zeros: `clipped_sum`), the clipped states are summed
and divided by the PUBLIC sample size n, Gaussian noise is added, and the noisy mean goes through the LM
head; the next token is its argmax (post-processing).

User-level bounding, before any aggregate (`choose_members`):
- each user decodes in ONE topic only, with ONE conversation: among the user's conversations in kept
  topics, the one of least keyed hash (public seed). Every choice depends on that user's rows alone, so
  adding or removing a user changes no other user's choice;
- per topic, the n chosen users of least keyed hash are the sample (uniform among the topic's chosen
  users, since the hash is a public pseudo-random permutation). The size n is public, never the data's.

Sensitivity (add-or-remove one user, the relation of every stage of the run): the release at step t is the
vector of every topic's sum / n. Adding user u changes one topic only (the one u chose). If that topic held
n or more chosen users, u may enter the sample and push out its n-th member v: the sum moves by
h_u - h_v, of norm <= 2C. If it held fewer, u is added: norm <= C. Removing u is the same in reverse. So
the L2 sensitivity of the whole step's release is exactly 2C / n (`l2_sensitivity`), and replace-one is
also 2C / n (u replaced by u' in the same topic: h_u' - h_u). Dividing by the public n (never the true
count) keeps the denominator fixed: a topic with fewer than n chosen users gives a shorter mean vector,
which leaves the argmax unchanged (the LM head is linear without bias) and only lowers its signal-to-noise.
A variable, Poisson sample would halve the sensitivity but has no data-independent size; the issue asks
for a fixed one.

The T steps are adaptive (step t's states depend on the released tokens y_<t), each a Gaussian mechanism
of multiplier z = sigma / (2C / n) fixed before data is read; their composition is dp-accounting's
`SelfComposedDpEvent(GaussianDpEvent(z), T)` (dp_ops.gaussian_accounting), composed with the run's other
stages by the joint calibration (its share of --epsilon_weights). Early stops (an end token) spend less,
and are still charged T. Users in several topics need no further accounting: each user is in one
topic's sample, so all topics together are one release per step (parallel composition is exact here).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import math
from collections.abc import Iterable

import numpy as np

from core.dp_stages import TOKEN_DECODING
from core.spend import MechanismSpend
from dp_ops.dp_events import event_to_json
from dp_ops.gaussian_accounting import composed_gaussian_event, epsilon_of_gaussian_releases
from dp_ops.gaussian_noise import add_gaussian_noise
from dp_ops.joint_calibration import StageRequest

STAGE = TOKEN_DECODING
# The seeded test noise's stream (dp_ops.gaussian_noise): distinct from the other stages'.
NOISE_STREAM = 0x70CE
# A step's release index for the seeded test noise: step * _RELEASE_STRIDE + cluster id.
_RELEASE_STRIDE = 1 << 20
MECHANISM = ("token-level private decoding: per step, Gaussian noise on each topic's sum of clipped final hidden "
             "states / public n (one conversation of one topic per user), argmax through the LM head; "
             "T steps, PLD composition")


@dataclasses.dataclass(frozen=True)
class TokenDecodingParams:
    """Public parameters: `steps` T (tokens decoded, each one Gaussian release), `sample_size` n (members
    per topic, the public denominator), `clip_norm` C (L2 bound on each member's hidden state)."""

    steps: int
    sample_size: int
    clip_norm: float

    def __post_init__(self):
        if self.steps < 1 or self.sample_size < 1:
            raise ValueError(f"need steps >= 1 and sample_size >= 1, got {self.steps}, {self.sample_size}")
        if not (self.clip_norm > 0 and math.isfinite(self.clip_norm)):
            raise ValueError(f"clip_norm must be > 0 and finite, got {self.clip_norm}")

    @property
    def l2_sensitivity(self) -> float:
        return l2_sensitivity(self.clip_norm, self.sample_size)


def l2_sensitivity(clip_norm: float, sample_size: int) -> float:
    """One step's user-level L2 sensitivity, all topics together (module docstring): 2C / n."""
    return 2.0 * clip_norm / sample_size


def token_decoding_request(weight: float, params: TokenDecodingParams) -> StageRequest:
    """The stage's calibration request: T Gaussian releases of sensitivity 2C / n, drawn by
    dp_ops.gaussian_noise from the noise multiplier."""
    return StageRequest(STAGE, "gaussian", params.l2_sensitivity, weight, releases=params.steps,
                        drawn_by_pipeline_dp=False)


def _hash(seed: int, purpose: str, key: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}\x1f{purpose}\x1f{key}".encode("utf-8", "surrogatepass"),
                                          digest_size=8).digest(), "big")


def user_choice(rows: Iterable[tuple[str, int]], seed: int) -> tuple[str, int] | None:
    """One user's decoding conversation: of the user's (conversation id, kept cluster id) rows, the one of
    least keyed hash (public seed); None without one. Depends on this user's rows alone."""
    rows = list(rows)
    return min(rows, key=lambda row: (_hash(seed, "token_conversation", row[0]), row)) if rows else None


def topic_sample(user_ids: Iterable[str], sample_size: int, seed: int) -> list[str]:
    """A topic's sample: of the users who chose it, the `sample_size` of least keyed hash (a uniform sample,
    as the hash is a public pseudo-random permutation), in that order."""
    return sorted(set(user_ids), key=lambda user: (_hash(seed, "token_member", user), user))[:sample_size]


def choose_members(rows: Iterable[tuple[str, str, int]], sample_size: int, seed: int) -> dict[int, list[str]]:
    """{cluster id: the conversation ids decoded for it}, from (user id, conversation id, cluster id) rows
    of kept clusters: at most one conversation per user, in one topic, at most `sample_size` per topic.
    The in-process form of what the Beam stage does with two group-bys."""
    by_user: dict[str, list[tuple[str, int]]] = collections.defaultdict(list)
    for user, conversation, cluster in rows:
        by_user[user].append((conversation, int(cluster)))
    chosen: dict[int, dict[str, str]] = collections.defaultdict(dict)
    for user, user_rows in by_user.items():
        conversation, cluster = user_choice(user_rows, seed)
        chosen[cluster][user] = conversation
    return {cluster: [users[u] for u in topic_sample(users, sample_size, seed)]
            for cluster, users in sorted(chosen.items())}


def clipped_sum(states: np.ndarray, clip_norm: float) -> np.ndarray:
    """Sum of the rows of `states` (members x d), each first scaled down to L2 norm <= clip_norm. A row
    holding an inf or NaN counts as zeros, as an absent member would: the clip cannot bound it (C / inf = 0
    and inf * 0 = NaN), and one NaN in the sum would leave the topic's release without its 2C / n bound."""
    states = np.asarray(states, dtype=np.float64)
    states = np.where(np.isfinite(states).all(axis=1, keepdims=True), states, 0.0)
    norms = np.linalg.norm(states, axis=1, keepdims=True)
    scale = np.minimum(1.0, clip_norm / np.maximum(norms, 1e-300))
    return (states * scale).sum(axis=0)


def noisy_mean(states: np.ndarray, params: TokenDecodingParams, sigma: float | None, noise_seed: int | None,
               cluster: int, step: int) -> np.ndarray:
    """One topic's release at one step: clipped sum / public n, plus N(0, sigma^2) per coordinate
    (sigma None: the evaluation's exact baseline, no noise). Production (noise_seed None) draws from the
    secure sampler (dp_ops.gaussian_noise)."""
    mean = clipped_sum(states, params.clip_norm) / params.sample_size
    if sigma is None:
        return mean
    return add_gaussian_noise(mean, sigma, noise_seed, step * _RELEASE_STRIDE + int(cluster), NOISE_STREAM)


def token_decoding_spend(params: TokenDecodingParams, noise_multiplier: float, delta: float) -> MechanismSpend:
    """The stage's spend: T Gaussians of multiplier z (sigma = z * 2C / n), its own epsilon at `delta`."""
    event = composed_gaussian_event(noise_multiplier, params.steps)
    return MechanismSpend(
        stage=STAGE, mechanism=MECHANISM,
        epsilon=epsilon_of_gaussian_releases(noise_multiplier, params.steps, delta), delta=delta,
        sensitivity=params.l2_sensitivity,
        noise={"kind": "gaussian", "sigma": noise_multiplier * params.l2_sensitivity,
               "per": "coordinate of each topic's mean hidden state, each step", "releases": params.steps,
               "sample_size": params.sample_size, "clip_norm": params.clip_norm},
        event=event_to_json(event))
