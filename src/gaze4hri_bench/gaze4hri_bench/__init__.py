"""Gaze4HRI offline benchmark (no ROS): session reader, per-frame ground truth,
face inputs, ONNX Runtime methods, per-frame results, statistics and reports."""

from gaze4hri_core import __version__

__all__ = ["__version__"]
