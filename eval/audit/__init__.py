"""Privacy audits: planted canaries through a pipeline and a scan of everything it wrote
(canary_generator, canaries), empirical membership inference (membership_inference), and the
per-night noise and quality of the nightly privacy modes at one window cap (nightly_privacy_modes)."""
