"""Differential-privacy mechanisms and their accounting, testable without Beam.

Every mechanism reports what it spent as a `MechanismSpend` (core/spend.py), so the report's privacy
section is assembled from what ran, never written by hand.
"""
