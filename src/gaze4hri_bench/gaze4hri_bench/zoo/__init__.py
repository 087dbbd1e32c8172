"""gaze4hri_bench.zoo"""
