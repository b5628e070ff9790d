"""Differential-privacy mechanisms and their accounting, testable without Beam.

Every mechanism reports what it spent as a `MechanismSpend` (core/spend.py) carrying the
dp-accounting event of the noise it drew (dp_events.py), so the report's privacy section is
assembled from what ran, never written by hand: the run's total is the PLD composition of those
events (run_budget.py), and the ledger composes nights the same way (budget_ledger.py).
"""
