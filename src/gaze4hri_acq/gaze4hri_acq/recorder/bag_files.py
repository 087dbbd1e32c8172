"""A trial's bag directory on disk: which MCAP file it holds, whether metadata.yaml names
exactly that file, and whether the file's CRCs agree with its bytes.

The MCAP file is named ``<trial>_0.mcap`` as rosbag2 does (docs/session_layout.md); a file
under rosbags' own name (``<trial>.mcap``) is the one a writer left before renaming it.
"""
from __future__ import annotations

from pathlib import Path

from gaze4hri_core.errors import SessionError
from gaze4hri_core.mcap_crc import Damage, check_mcap

__all__ = ["mcap_file", "metadata_agrees", "FIX_DAMAGED", "check_bag", "require_intact"]

FIX_DAMAGED = ("re-record the trial with 'gaze4hri-acq session --redo ID' (same --subject and --backend) "
               "or restore the bag from a backup")


def mcap_file(bag_dir: Path) -> Path | None:
    """The bag's MCAP file (rosbag2 name first, then rosbags' own name)."""
    bag_dir = Path(bag_dir)
    for p in (bag_dir / f"{bag_dir.name}_0.mcap", bag_dir / f"{bag_dir.name}.mcap"):
        if p.is_file():
            return p
    found = sorted(bag_dir.glob("*.mcap"))
    return found[0] if found else None


def metadata_agrees(bag_dir: Path) -> bool:
    """metadata.yaml exists, parses, and its files are exactly the MCAP files present."""
    import yaml
    from gaze4hri_core.fileio import load_yaml

    meta = Path(bag_dir) / "metadata.yaml"
    try:
        info = load_yaml(meta.read_text("utf-8"))["rosbag2_bagfile_information"]
        listed = set(info.get("relative_file_paths") or []) | {f["path"] for f in info.get("files") or []}
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        return False
    present = {p.name for p in Path(bag_dir).glob("*.mcap")}
    return bool(listed) and listed == present


def check_bag(bag_dir: Path) -> list[Damage] | None:
    """Damaged places of a bag's MCAP file by its CRCs (gaze4hri_core.mcap_crc.check_mcap):
    [] when intact, None when the file is missing or incomplete (repair_bag's case)."""
    path = mcap_file(Path(bag_dir))
    return None if path is None else check_mcap(path)


def require_intact(bag_dir: Path, trial: str | None = None) -> None:
    """Raise a one-line SessionError naming the trial, the bag and the first damaged offset
    when a CRC of the bag disagrees with its bytes."""
    damages = check_bag(bag_dir)
    if damages:
        d = damages[0]
        more = f" (+{len(damages) - 1} more)" if len(damages) > 1 else ""
        who = f"trial {trial}: " if trial else ""
        raise SessionError(f"{who}{d.line()}{more}", str(d.path), FIX_DAMAGED.replace("ID", trial or "ID"))
