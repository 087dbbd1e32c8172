"""Shipped exclusion lists (YAML), read by :mod:`gaze4hri_bench.stats.exclusions`."""
