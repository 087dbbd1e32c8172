"""Recorded sessions -> trials -> frames (lazy), per-frame ground truth and validity.

>>> from gaze4hri_bench.data.reader import Dataset
>>> ds = Dataset("sessions/", subjects=["S01"], stride=2)          # doctest: +SKIP
>>> ref = ds.trials()[0]; gt = ds.trial_ground_truth(ref)          # doctest: +SKIP
>>> for f in ds.iter_frames(ref): ...                              # doctest: +SKIP
"""
