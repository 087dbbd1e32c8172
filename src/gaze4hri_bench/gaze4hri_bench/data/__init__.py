"""Datasets -> trials -> frames (lazy), per-frame ground truth and validity. Two reader
backends behind one interface (backends/base.py): our MCAP sessions and the study's
released layout (docs/study_dataset.md); ``reader.Dataset`` picks one.

>>> from gaze4hri_bench.data.reader import Dataset
>>> ds = Dataset("sessions/", subjects=["S01"], stride=2)          # doctest: +SKIP
>>> ref = ds.trials()[0]; gt = ds.trial_ground_truth(ref)          # doctest: +SKIP
>>> for f in ds.iter_frames(ref): ...                              # doctest: +SKIP
"""
