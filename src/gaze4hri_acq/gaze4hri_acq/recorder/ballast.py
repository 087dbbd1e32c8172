"""Disk ballast: a file of reserved bytes beside the bags, allocated when a trial
starts and deleted the moment the disk fills (issue 13, "no lost data at a full disk").

The free-space reserve in ``TrialBag`` stops our own writes early, but another
process can still take every free byte (a second recording, a log, a copy). The
ballast holds the room that closing the bag (pending chunk, summary, metadata.yaml)
and updating session.yaml need, whoever filled the disk: releasing it gives that
room back at once. It is a real allocation (``posix_fallocate``), not a sparse file,
so the file system cannot hand those blocks to anyone else while we record.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DiskBallast", "BALLAST_NAME"]

BALLAST_NAME = ".gaze4hri_disk_reserve"


class DiskBallast:
    """``size`` reserved bytes in ``folder``/.gaze4hri_disk_reserve."""

    def __init__(self, folder: Path | str, size: int):
        self.path = Path(folder) / BALLAST_NAME
        self.size = max(0, int(size))
        self.held = False

    def allocate(self) -> bool:
        """Reserve the bytes; False (and nothing left behind) when the disk cannot."""
        if self.size <= 0:
            return False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.posix_fallocate(fd, 0, self.size)
            finally:
                os.close(fd)
        except OSError:
            self.release()
            return False
        self.held = True
        return True

    def release(self) -> bool:
        """Give the bytes back to the file system; True when a ballast was removed."""
        had = self.held
        self.held = False
        try:
            self.path.unlink()
            return True
        except FileNotFoundError:
            return had
        except OSError:
            return False
