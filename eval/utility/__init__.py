"""Topic utility: what a release recovers and how well it is named (topic_quality, topic_names,
label_coverage, label_fit, label_trust), the synthetic exemplars (exemplar_quality), the non-private
SIMPLE-CLIO baseline and URANIA's utility metrics against it (simple_clio, utility_metrics,
llm_judge), the privacy-utility sweep (sweep) and nightly runs over a generated stream (nightly_stream)."""
