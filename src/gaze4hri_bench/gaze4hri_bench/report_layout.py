"""File names the report folder shares between its writers: ``gaze4hri-bench review --extremes``
writes the clips' index, ``analyze`` links the clips it lists (neither package imports the other)."""
from __future__ import annotations

__all__ = ["REVIEW_DIR", "REVIEW_INDEX"]

#: Folder of the review clips inside a report folder (``review RESULTS --extremes --out REPORT/review``).
REVIEW_DIR = "review"
#: The clips' index in that folder: a JSON list of picks with ``mp4`` and ``png`` relative to it.
REVIEW_INDEX = "index.json"
