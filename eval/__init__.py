"""Privacy audits and utility evaluation (issue 4): the SIMPLE-CLIO baseline, the CanaryBench leakage
test, empirical membership inference, URANIA's utility metrics and the privacy-utility sweep.

Everything here is for evaluation only: the baseline is NOT differentially private.
"""
