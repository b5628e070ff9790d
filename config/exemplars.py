"""The exemplars group: synthetic example requests per topic, and names decoded from its DP centre."""

from __future__ import annotations

from core.params import Params, advanced_flag, check, flag, params_group, parse_bool


@params_group
class ExemplarParams(Params):
    """Synthetic example requests per topic, and names decoded from its DP centre, both evolved toward the
    centre (post-processing, no budget)."""

    exemplars_per_topic: int = flag(
        0, "Synthetic example requests released per topic (0: none). Written from the topic's released name, "
           "description and keywords, by the LLM backend when --llm_steps includes exemplars, else from "
           "templates; kept by closeness to the topic's DP centre. No privacy budget (docs/report.md).", type=int,
        public=True, ge=0, le=10)
    exemplar_candidates: int = advanced_flag(
        20, "Candidate requests written per topic in the first draft (each later round asks for half as many "
            "variations, at least --exemplars_per_topic).", type=int, public=True, ge=0, le=50)
    exemplar_rounds: int = advanced_flag(
        2, "Rounds of varying the candidates nearest the DP centre and ranking again (0: the first draft only).",
        type=int, public=True, ge=0, le=10)
    centre_decoder: bool = flag(
        True, "Name and describe each released topic by decoding its DP centre, with no privacy budget; on by "
              "default (--centre_decoder false: off; docs/llm_backends.md#names-decoded-from-the-dp-centre). "
              "Candidate names written from its released labels (by the LLM backend when --llm_steps includes "
              "names, else from templates) and from a public bank are kept by closeness to the centre, varied and "
              "kept again. The report marks such names dp_centre_decoded; a name in a sensitive category still "
              "needs the topic's votes, and an unverified topic gets non-sensitive candidates only (it stays "
              "unverified).",
        type=parse_bool, nargs="?", const=True, public=True)

    def check_values(self):
        check(self.exemplars_per_topic <= self.exemplar_candidates,
              "--exemplar_candidates must be in [--exemplars_per_topic, 50]")
