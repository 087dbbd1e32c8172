"""gaze4hri_bench.stats"""
