"""Each embedding model's cosine floors (issue 58): the floors were tuned on all-MiniLM-L6-v2, and another
model's cosines sit on another scale, so each floor is carried over by quantile matching.

    python -m eval.utility.similarity_floors [--model use-multilingual-v3] [--conversations 800] [--seed 11]

A floor is a cosine between two kinds of text: a conversation and a keyword (the offline selector's vote floor,
the themes' floor, the concern facet's levels) or two keywords (a custom keyword's nearest bundled category, an
LLM's word to a keyword). For each kind the script pools every such pair's cosine under the reference model
(all-MiniLM-L6-v2) and under `--model`, on public texts only: generated conversations (beam_jobs.generate_sample)
and the bundled keyword set. A floor t keeps the share q of the reference's pairs at or above t; the model's floor
is the cosine that keeps the same share of its own pairs. It prints the table config.embedding.SIMILARITY_FLOORS
holds for the model, rounded to 0.01, and the share each floor keeps; tests/eval/test_similarity_floors.py
checks the committed table against it.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from backends import embedding
from backends.facet_set import load_facet_set
from backends.keyword_set import load_keyword_set
from config.embedding import SIMILARITY_FLOORS, TUNED_ON, SimilarityFloors
from synthetic.sample import generate_records

REFERENCE_MODEL = TUNED_ON
FACET_CHARS = 1000  # the job's facet text (backends.offline)
# Which pairs each floor compares: conversation-keyword or keyword-keyword.
KIND = {"keyword_vote": "conversation", "theme": "conversation", "nearest_category": "keyword",
        "word_to_keyword": "keyword"}


def pooled_cosines(model: str, conversations: list[str], keywords: list[str]) -> dict[str, np.ndarray]:
    """Every conversation-keyword and keyword-keyword cosine under `model`, sorted."""
    keyword_vectors = embedding.embed_texts(model, keywords)
    conversation_vectors = embedding.embed_texts(model, conversations)
    pairs = keyword_vectors @ keyword_vectors.T
    return {"conversation": np.sort((conversation_vectors @ keyword_vectors.T).ravel()),
            "keyword": np.sort(pairs[np.triu_indices(len(keywords), 1)])}


def matched(floor: float, reference: np.ndarray, model: np.ndarray) -> tuple[float, float]:
    """(the model's cosine keeping the share of its pairs that `floor` keeps of the reference's, that share)."""
    share = 1.0 - np.searchsorted(reference, floor, side="left") / len(reference)
    index = min(len(model) - 1, max(0, int(round((1.0 - share) * len(model)))))
    return float(model[index]), float(share)


def carried_floors(model: str, conversations: int = 800, seed: int = 11) -> tuple[SimilarityFloors, dict, dict]:
    """The model's floors carried over from the reference model's, the share each keeps, and the bundled
    facet file's level thresholds ({facet: {answer: threshold}}, conversation-keyword pairs) carried over."""
    keywords = list(load_keyword_set(None).keywords)
    texts = ["\n".join(m["content"] for m in r["messages"] if m["role"] == "user")[:FACET_CHARS]
             for r in generate_records(conversations, max(1, conversations // 3), seed)]
    reference, own = pooled_cosines(REFERENCE_MODEL, texts, keywords), pooled_cosines(model, texts, keywords)
    floors, shares = {}, {}
    for field in dataclasses.fields(SimilarityFloors):
        kind = KIND[field.name]
        floor, share = matched(getattr(SIMILARITY_FLOORS[REFERENCE_MODEL], field.name), reference[kind], own[kind])
        floors[field.name], shares[field.name] = round(floor, 2), round(share, 5)
    levels = {facet.name: {answer.id: round(matched(answer.threshold, reference["conversation"],
                                                    own["conversation"])[0], 2)
                           for answer in facet.for_model(REFERENCE_MODEL).answers if answer.threshold is not None}
              for facet in load_facet_set().facets if facet.classifier == "sensitive_similarity"}
    return SimilarityFloors(**floors), shares, levels


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="use-multilingual-v3")
    parser.add_argument("--conversations", type=int, default=800)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    floors, shares, levels = carried_floors(args.model, args.conversations, args.seed)
    print(f"{args.model}: {floors}")
    for field in dataclasses.fields(SimilarityFloors):
        print(f"  {field.name}: {getattr(SIMILARITY_FLOORS[REFERENCE_MODEL], field.name)} -> "
              f"{getattr(floors, field.name)} (share of {KIND[field.name]}-keyword pairs kept: {shares[field.name]})")
    print(f"committed in config.embedding.SIMILARITY_FLOORS: {SIMILARITY_FLOORS.get(args.model)}")
    for facet, thresholds in levels.items():
        committed = {a.id: a.threshold for a in next(f for f in load_facet_set().facets if f.name == facet)
                     .for_model(args.model).answers if a.threshold is not None}
        print(f"facet {facet} levels for {args.model}: {thresholds} (the bundled facet file's: {committed})")


if __name__ == "__main__":
    main()
