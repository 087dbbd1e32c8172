"""Per-trial review videos (``gaze4hri-bench review``): the trial's frames with the
ground-truth gaze arrow and each method's arrow from the eye midpoint, angular errors
and each frame's validity reason, as an H.264 MP4 and a contact-sheet PNG.

``overlay`` is pure geometry (projection of the arrows; no I/O), ``draw`` paints on
an image, ``video`` encodes, ``render`` joins results, dataset and drawing, ``extremes``
picks each method's best and worst trial for the report."""
