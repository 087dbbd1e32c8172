"""gaze4hri_bench.pipeline"""
