"""Beam PTransforms, one pipeline stage per module. Record types live in records.py."""
