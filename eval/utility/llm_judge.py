"""LLMSummaryJudge: URANIA's comparative rating (1-5 each) and binary preference of two topic summaries,
asked of an LLM backend (backends/llm/: the job's clients, fan-out with retries, cache and counters).

The prompt carries the two summaries and nothing else. The baseline's summaries may quote
conversation text, so with --pseudonymize on (the default for remote backends, as in the job) both
summaries of a pair are pseudonymized together before they are sent (with the job's --pseudonyms, typed
or surrogate, and --pseudonymize_judge); the judge is not told which one
is private. An answer that cannot be read after the fan-out's retries is a failed pair: it is counted
and left out, never given a rating.

The eval CLIs take the job's own --llm_* and --pseudonymize options (config/llm.py, LLMParams);
--llm_backend offline (the default) means no judge.
"""

from __future__ import annotations

import abc
import argparse

from backends import factory
from backends.llm import parsing, prompts
from backends.llm.config import make_caller, person_judge_spec
from backends.llm.fanout import CallSpec
from backends.llm.metrics import StepCounters
from config.llm import LLMParams


class JudgeFailure(Exception):
    """The judge gave no usable verdict for a pair (e.g. a malformed answer after retries)."""


class SummaryJudge(abc.ABC):
    """Compares two topic summaries (eval/utility/llm_judge.py implements it with an LLM; none is offline)."""

    @abc.abstractmethod
    def compare(self, first: str, second: str) -> tuple[int, int, int]:
        """(rating of first 1-5, rating of second 1-5, preferred: 0 = first, 1 = second); raises JudgeFailure."""

    def compare_many(self, pairs: list[tuple[str, str]]) -> list[tuple[int, int, int] | None]:
        """One verdict per (first, second) pair, None where the judge failed."""
        verdicts = []
        for first, second in pairs:
            try:
                verdicts.append(self.compare(first, second))
            except JudgeFailure:
                verdicts.append(None)
        return verdicts

    def details(self) -> dict:
        """Anything worth reporting next to the verdicts (backend, model, call counts)."""
        return {}


class LLMSummaryJudge(SummaryJudge):
    step = "judge"

    def __init__(self, config: LLMParams, caller=None):
        self.config = config
        self._caller = caller
        self._pseudonymizer = None
        self.counters = StepCounters(self.step)

    def _setup(self) -> None:
        if self._caller is None:
            self._caller = make_caller(self.config)
        if self.config.pseudonymizes and self._pseudonymizer is None:
            from backends.pii.pseudonymize import shared_pseudonymizer
            # the job's pseudonyms (--pseudonyms: typed or surrogate) and person judge, as backends/llm/steps.py
            self._pseudonymizer = shared_pseudonymizer(self.config.pseudonyms or "typed",
                                                       person_judge_spec(self.config))

    def _spec(self, first: str, second: str) -> CallSpec:
        if self._pseudonymizer is not None:
            first, second = self._pseudonymizer.pseudonymize_texts([first, second])
        return CallSpec(prompts.judge_messages(first, second), parsing.parse_judgement, json_output=True,
                        max_tokens=64)

    def compare_many(self, pairs: list[tuple[str, str]]) -> list[tuple[int, int, int] | None]:
        if not pairs:
            return []
        self._setup()
        results = self._caller.call_many([self._spec(first, second) for first, second in pairs])
        self.counters.record(results)
        return [r.value if r.ok else None for r in results]

    def compare(self, first: str, second: str) -> tuple[int, int, int]:
        verdict = self.compare_many([(first, second)])[0]
        if verdict is None:
            raise JudgeFailure("no usable judgement")
        return verdict

    def details(self) -> dict:
        return {"backend": self.config.llm_backend, "model": self.config.llm_model,
                # no fallback answers for the judge: a failed call is a failed pair
                "llm": {name: int(value) for name, value in self.counters.totals.items() if name != "fallbacks"}}


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    """The job's LLM options, same names, defaults and help (LLMParams)."""
    from config.flags import add_flags
    add_flags(parser.add_argument_group("LLM judge (the job's LLM options; offline = no judge)"), LLMParams)


def judge_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> LLMSummaryJudge | None:
    """None for --llm_backend offline; otherwise a judge, after the job's checks of the LLM options and
    its one preflight step (backends.factory.preflight: the pseudonymizer's name model, the backend's software
    and model, the local server, the remote backend's fixed call), before any report is read."""
    if args.llm_backend == "offline":
        return None
    from config.flags import params_from
    try:
        llm = params_from(args, LLMParams)
        factory.preflight(llm)
    except ValueError as error:
        if parser is None:
            raise
        parser.error(str(error))
    return LLMSummaryJudge(llm.resolved())
