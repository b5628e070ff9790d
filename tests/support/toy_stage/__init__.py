"""A toy DP stage beside the topics, in the files a new stage takes (transforms/release_stage.py): its
mechanism (toy_mechanism.py, standing for a new module of dp_ops/), its stage module (release/toy_sums.py,
standing for a new module of transforms/release_stages/) and, in the test that adds it, its declaration (a
DPStageSpec added to dp_ops/dp_stage_specs.DP_STAGE_SPECS) and its flag (a field of the keywords group)."""
