"""Read per-frame results (schema.py) and reduce them to video (trial) level at once.

The study aggregates valid frames -> video mean -> subject mean (Sezer et al., arXiv
2605.04770, "Analyses (all subject-level)"). Only the video means and the frames of
the mutual-gaze videos (for the eccentricity regression of exp. 4.2) are kept, so the
memory used does not grow with the number of frames: each file is read (only the
columns needed), reduced with Arrow's hash aggregation and dropped.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from gaze4hri_core.errors import Gaze4HRIError

from ..schema import METADATA_KEY, REQUIRED, SCHEMA_VERSION

__all__ = [
    "LoadedResults",
    "FileInfo",
    "find_parquet",
    "load_results",
    "pipeline_profile",
    "CORE_COLUMNS",
    "OPTIONAL_COLUMNS",
    "SUBJECT_META",
]

#: Columns without which a file cannot be analysed at all.
CORE_COLUMNS = ("subject", "experiment", "condition", "target", "trial", "method", "input", "valid", "error_deg")
#: Columns needed only by some analyses: column -> analyses that need it.
OPTIONAL_COLUMNS = {
    "head_gaze_conflict_deg": ("conflict",),
    "gt_pitch_deg": ("mutual",),
    "gt_yaw_deg": ("mutual",),
    "cam_world_x": ("mutual",),
    "cam_world_y": ("mutual",),
    "cam_world_z": ("mutual",),
}
#: what the line-scan segments need (study_tables.label_segments): the camera path per frame
_PATH = {"t_ns", "cam_world_x", "cam_world_y", "cam_world_z"}
_KEYS = ["subject", "method", "input", "experiment", "condition", "target", "trial"]
#: Subject metadata used for grouping when results carry it: name -> accepted column names.
SUBJECT_META = {"glasses": ("glasses", "subject_glasses"), "gender": ("gender", "subject_gender")}
#: Pipeline profile assumed for files whose metadata does not name one.
DEFAULT_PIPELINE_PROFILE = "reference"


def pipeline_profile(meta: dict | None) -> str:
    """The pipeline profile named in a file's provenance metadata (``profile``: a name or
    an object with ``name``); files without the key count as ``reference``."""
    p = (meta or {}).get("profile")
    if isinstance(p, dict):
        p = p.get("name")
    return str(p) if p else DEFAULT_PIPELINE_PROFILE


@dataclass
class FileInfo:
    """One input file: where it is, its hash and what its metadata says."""

    path: str
    sha256: str
    rows: int
    schema: str | None
    methods: list[str]
    inputs: list[str]
    metadata: dict | None
    missing_columns: list[str] = field(default_factory=list)
    status: str = "used"  # used | excluded
    profile: str = DEFAULT_PIPELINE_PROFILE
    reason: str = ""


@dataclass
class LoadedResults:
    """Video-level table, mutual-gaze frames and provenance of the inputs.

    videos: one row per (subject, method, input, trial) with ``error_mean`` (mean of
    the valid frames' errors, deg), ``conflict_mean`` (mean head-gaze conflict over the
    same frames, deg), ``conflict_all_mean`` (mean conflict over every frame of the
    video with a finite value), ``abs_pitch_mean`` / ``abs_yaw_mean`` (mean |ground-truth
    pitch| / |yaw| over every frame, deg), ``error_var`` (population variance of the valid
    frames' errors, deg^2), ``n_valid``, ``n_frames``; categorical keys.
    mutual_frames: valid frames of the mutual-gaze videos: subject, method, input,
    condition, trial, error_deg, abs_pitch_deg, abs_yaw_deg; with the camera's position in
    the results also t_ns, ``segment`` and ``n_segments`` (the frame's piece of the camera
    path, study_tables.label_segments).
    missing: (method, input) -> columns absent from its files.
    no_valid: (method, input) pairs without a single valid frame.
    duplicates: videos found in more than one file (the first file read is kept).
    subjects: subject metadata when the results carry it (columns glasses, gender or
    provenance ``subjects``): subject plus the SUBJECT_META names present.
    invalid: frames that enter no mean per method, input and reason (columns method,
    input, reason, frames): the ``invalid_reason`` of invalid frames (``(none given)``
    without one), ``error_not_finite`` for frames marked valid with a NaN error.
    """

    videos: pd.DataFrame
    mutual_frames: pd.DataFrame
    files: list[FileInfo]
    missing: dict[tuple[str, str], set[str]]
    no_valid: list[tuple[str, str]]
    duplicates: int = 0
    invalid: pd.DataFrame = field(default_factory=pd.DataFrame)
    subjects: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["subject"]))


def find_parquet(inputs: list[Path]) -> list[Path]:
    """Expand files and directories (searched recursively) into Parquet paths."""
    out: list[Path] = []
    for p in map(Path, inputs):
        if p.is_dir():
            # hidden folders hold the pipeline's per-trial part files (.parts/): not results
            found = sorted(
                f for f in p.rglob("*.parquet") if not any(x.startswith(".") for x in f.relative_to(p).parts)
            )
            if not found:
                raise Gaze4HRIError(
                    f"no .parquet files in directory {p}",
                    "analyze RESULTS",
                    "pass per-frame results files or folders holding them",
                )
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise Gaze4HRIError(f"results path {p} does not exist", "analyze RESULTS", "check the path")
    seen: set[Path] = set()
    return [p for p in out if not (p.resolve() in seen or seen.add(p.resolve()))]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _metadata(pf: pq.ParquetFile) -> dict | None:
    kv = pf.schema_arrow.metadata or {}
    raw = kv.get(METADATA_KEY)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return {"_unreadable": True}


def _metadata_subjects(meta: dict | None) -> list[pd.DataFrame]:
    """Subject metadata from a file's provenance (``subjects``: id -> {glasses, gender, ...})."""
    recs = (meta or {}).get("subjects")
    if not isinstance(recs, dict):
        return []
    rows = [
        {"subject": str(sid), **{k: rec[k] for k in SUBJECT_META if k in rec}}
        for sid, rec in recs.items()
        if isinstance(rec, dict)
    ]
    return [pd.DataFrame(rows)] if rows else []


def _finite_or_null(arr) -> pa.ChunkedArray:
    """Float column with NaN and infinities turned into nulls (Arrow's mean skips nulls, not NaN)."""
    x = pc.cast(arr, pa.float64())
    return pc.if_else(pc.is_finite(pc.fill_null(x, float("nan"))), x, pa.scalar(None, pa.float64()))


def _reduce(table: pa.Table, has: set[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Video means of the valid frames and the mutual-gaze frames of one file."""
    err = table["error_deg"]
    valid = pc.and_(pc.fill_null(table["valid"], False), pc.is_finite(pc.fill_null(err, float("nan"))))
    # per-video means over ALL frames (ground truth does not depend on the method's validity):
    # the study's conflict is averaged over every head-pose sample of the video
    # (GazeForHRI/Gaze4HRI@main:head_gaze_conflict_vs_error.py:95-111) and its eccentricity
    # predictors over every sample of the video (point_analysis.py:793-798)
    allf = {c: _finite_or_null(table[c]) for c in ("head_gaze_conflict_deg", "gt_pitch_deg", "gt_yaw_deg") if c in has}
    for c in ("gt_pitch_deg", "gt_yaw_deg"):
        if c in allf:
            allf[c] = pc.abs(allf[c])
    base = table.select(_KEYS)
    for c, arr in allf.items():
        base = base.append_column(f"_all_{c}", arr)
    counts = base.group_by(_KEYS, use_threads=True).aggregate(
        [([], "count_all")] + [(f"_all_{c}", "mean") for c in allf]
    )
    all_names = {
        "_all_head_gaze_conflict_deg_mean": "conflict_all_mean",
        "_all_gt_pitch_deg_mean": "abs_pitch_mean",
        "_all_gt_yaw_deg_mean": "abs_yaw_mean",
    }
    counts = counts.rename_columns(
        [all_names.get(c, "n_frames" if c == "count_all" else c) for c in counts.column_names]
    )

    vt = table.filter(valid)
    # population variance of the valid errors: the study's frame-pooled SD over videos
    # (head_yaw_model_ranking.py:107-149) needs each video's n, mean and SD
    aggs = [("error_deg", "mean"), ("error_deg", "count"), ("error_deg", "variance", pc.VarianceOptions(ddof=0))]
    if "head_gaze_conflict_deg" in has:
        aggs.append(("head_gaze_conflict_deg", "mean"))
    means = vt.group_by(_KEYS, use_threads=True).aggregate(aggs)
    names = {
        "error_deg_mean": "error_mean",
        "error_deg_count": "n_valid",
        "error_deg_variance": "error_var",
        "head_gaze_conflict_deg_mean": "conflict_mean",
    }
    means = means.rename_columns([names.get(c, c) for c in means.column_names])
    vid = counts.join(means, _KEYS, join_type="left outer").to_pandas()
    for c in ("conflict_mean", "conflict_all_mean", "abs_pitch_mean", "abs_yaw_mean"):
        if c not in vid:
            vid[c] = np.nan
    vid["n_valid"] = vid["n_valid"].fillna(0).astype("int64")
    mutual = pa.table({})
    if {"gt_pitch_deg", "gt_yaw_deg"} <= has:
        m = vt.filter(pc.equal(vt["experiment"], "mutual"))
        mutual = pa.table(
            {
                "subject": m["subject"],
                "method": m["method"],
                "input": m["input"],
                "condition": m["condition"],
                "trial": m["trial"],
                "error_deg": m["error_deg"],
                "abs_pitch_deg": pc.abs(m["gt_pitch_deg"]),
                "abs_yaw_deg": pc.abs(m["gt_yaw_deg"]),
                **({"t_ns": m["t_ns"]} if _PATH <= has else {}),
            }
        )
    mutual = mutual.to_pandas()
    if _PATH <= has and len(mutual):
        # each valid frame's segment of its video's camera path, the corners found on every
        # frame of the video (valid or not), as the study's (line_movement_analysis_paper.py:290-330)
        from .study_tables import label_segments

        path = (
            table.filter(pc.equal(table["experiment"], "mutual"))
            .select(["subject", "trial", *sorted(_PATH)])
            .to_pandas()
        )
        mutual = label_segments(path, mutual)
    return vid, mutual


#: reason of a frame marked valid whose error is NaN or infinite (left out of every mean)
ERROR_NOT_FINITE = "error_not_finite"
#: reason of an invalid frame in a file without an ``invalid_reason`` column (or with it empty)
NO_REASON = "(none given)"


def _unused_frames(table: pa.Table, has_reason: bool) -> pa.Table:
    """The frames that enter no mean (not ``valid``, or ``valid`` with a non-finite
    ``error_deg``) with their reason: the file's ``invalid_reason`` for invalid frames
    (``(none given)`` when the file has none), ``error_not_finite`` for valid frames
    whose error is NaN or infinite. Columns method, input, invalid_reason."""
    flag = pc.fill_null(table["valid"], False)
    finite = pc.is_finite(pc.fill_null(table["error_deg"], float("nan")))
    bad = table.filter(pc.invert(pc.and_(flag, finite)))
    if not bad.num_rows:
        return pa.table(
            {
                "method": pa.array([], pa.string()),
                "input": pa.array([], pa.string()),
                "invalid_reason": pa.array([], pa.string()),
            }
        )
    flag_bad = pc.fill_null(bad["valid"], False)
    given = pc.cast(bad["invalid_reason"], pa.string()) if has_reason else pa.nulls(bad.num_rows, pa.string())
    given = pc.if_else(pc.equal(pc.fill_null(given, ""), ""), pa.scalar(NO_REASON), given)
    reason = pc.if_else(flag_bad, pa.scalar(ERROR_NOT_FINITE), given)
    return pa.table(
        {
            "method": pc.cast(bad["method"], pa.string()),
            "input": pc.cast(bad["input"], pa.string()),
            "invalid_reason": reason,
        }
    )


def load_results(paths: list[Path]) -> LoadedResults:
    """Read per-frame Parquet files (or folders of them) into video-level means.

    Files missing a core column or carrying another schema version are refused with
    a one-line error naming them (mixed versions cannot be analysed together);
    files missing an analysis-specific column are used and that analysis skips them.
    """
    files = find_parquet(paths)
    if not files:
        raise Gaze4HRIError("no results files given", "analyze RESULTS", "pass per-frame Parquet files or folders")
    infos: list[FileInfo] = []
    handles: list[pq.ParquetFile] = []
    # hash in a background thread (hashlib releases the GIL) while the files are read
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        hashes = [pool.submit(_sha256, p) for p in files]
        return _load(files, hashes, infos, handles)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _open(files, infos, handles) -> None:
    """Open every file's Parquet footer (metadata, columns) into ``infos`` and ``handles``; refuse
    unreadable files and a mix of schema versions."""
    for p in files:
        try:
            pf = pq.ParquetFile(p)
        except (pa.ArrowInvalid, OSError) as e:
            raise Gaze4HRIError(
                f"{p} is not a readable Parquet file ({str(e).splitlines()[0]})",
                "analyze RESULTS",
                "pass per-frame results written by gaze4hri-bench run",
            ) from None
        meta = _metadata(pf)
        cols = set(pf.schema_arrow.names)
        info = FileInfo(
            path=str(p),
            sha256="",
            rows=pf.metadata.num_rows,
            schema=(meta or {}).get("schema"),
            methods=[],
            inputs=[],
            metadata=meta,
            missing_columns=[c for c in REQUIRED if c not in cols],
            profile=pipeline_profile(meta),
        )
        infos.append(info)
        handles.append(pf)
    versions = {i.schema for i in infos if i.schema is not None}
    if len(versions) > 1:
        by = {v: [Path(i.path).name for i in infos if i.schema == v] for v in sorted(versions)}
        desc = "; ".join(f"{v}: {', '.join(n[:3])}{' ...' if len(n) > 3 else ''}" for v, n in by.items())
        raise Gaze4HRIError(
            f"results mix schema versions ({desc})",
            "analyze RESULTS",
            f"analyse files of one version ({SCHEMA_VERSION}) or re-run the pipeline",
        )
    if versions and versions != {SCHEMA_VERSION}:
        raise Gaze4HRIError(
            f"results have schema {versions.pop()}, this version reads {SCHEMA_VERSION}",
            "analyze RESULTS",
            "use the gaze4hri-bench version that wrote them or re-run the pipeline",
        )


def _read_table(info: FileInfo, pf, has: set[str]) -> pa.Table:
    """The columns the analyses need of one file, string keys dictionary-encoded, error_deg as float64."""
    want = list(CORE_COLUMNS) + [c for c in OPTIONAL_COLUMNS if c in has]
    want += ["invalid_reason"] if "invalid_reason" in has else []
    want += ["t_ns"] if _PATH <= has else []
    # string keys read dictionary-encoded: Arrow then hashes small integer codes
    dict_cols = [
        c
        for c in [*_KEYS, "invalid_reason"]
        if c in has
        and (
            pa.types.is_string(pf.schema_arrow.field(c).type) or pa.types.is_large_string(pf.schema_arrow.field(c).type)
        )
    ]
    table = pq.ParquetFile(info.path, read_dictionary=dict_cols).read(columns=want).unify_dictionaries()
    for c in _KEYS:
        if not pa.types.is_string(table[c].type) and not pa.types.is_dictionary(table[c].type):
            table = table.set_column(table.schema.get_field_index(c), c, pc.cast(table[c], pa.string()))
    i = table.schema.get_field_index("error_deg")
    return table.set_column(i, "error_deg", pc.cast(table["error_deg"], pa.float64()))


def _assemble(
    vids, mutuals, reasons, subj_meta
) -> tuple[pd.DataFrame, int, list, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The files' parts as one table each: videos (duplicates dropped, counted), the methods without a
    valid frame, mutual-gaze frames, invalid frames per reason and subject metadata."""
    videos = pd.concat(vids, ignore_index=True)
    for c in _KEYS:
        videos[c] = videos[c].astype(str).astype("category")
    # the same (subject, method, input, trial) in two files: keep one, count it
    dup = videos.duplicated(["subject", "method", "input", "trial"], keep="first")
    duplicates = int(dup.sum())
    if duplicates:
        videos = videos[~dup].reset_index(drop=True)
    nv = videos.groupby(["method", "input"], observed=True)["n_valid"].sum()
    no_valid = [(str(m), str(i)) for (m, i), n in nv.items() if n == 0]
    cols = ["subject", "method", "input", "condition", "trial", "error_deg", "abs_pitch_deg", "abs_yaw_deg"]
    mutual = pd.concat(mutuals, ignore_index=True) if mutuals else pd.DataFrame({c: [] for c in cols})
    for c in ["subject", "method", "input", "condition", "trial"]:
        mutual[c] = mutual[c].astype(str).astype("category")
    inv = (
        pd.concat(reasons, ignore_index=True)
        if reasons
        else pd.DataFrame(columns=["method", "input", "invalid_reason", "count_all"])
    )
    inv = inv.rename(columns={"invalid_reason": "reason", "count_all": "frames"})
    for c in ("method", "input", "reason"):
        inv[c] = inv[c].astype(str).replace({"": "(none given)", "None": "(none given)"})
    inv = inv.groupby(["method", "input", "reason"], as_index=False)["frames"].sum()
    subjects = pd.DataFrame(columns=["subject"])
    if subj_meta:
        subjects = pd.concat(subj_meta, ignore_index=True)
        subjects["subject"] = subjects["subject"].astype(str)
        subjects = subjects.groupby("subject", as_index=False).first()
    return videos, duplicates, no_valid, mutual, inv, subjects


def _load(files, hashes, infos, handles) -> LoadedResults:
    _open(files, infos, handles)
    vids, mutuals, reasons, subj_meta = [], [], [], []
    missing: dict[tuple[str, str], set[str]] = {}
    for info, pf in zip(infos, handles, strict=True):
        lacking = [c for c in CORE_COLUMNS if c in info.missing_columns]
        if lacking:
            info.status, info.reason = "excluded", f"missing required column(s) {', '.join(lacking)}"
            continue
        has = set(pf.schema_arrow.names)
        table = _read_table(info, pf, has)
        vid, mut = _reduce(table, has)
        meta_cols = {
            k: next(c for c in names if c in has) for k, names in SUBJECT_META.items() if any(c in has for c in names)
        }
        if meta_cols:
            sm = pq.ParquetFile(info.path).read(columns=["subject", *meta_cols.values()]).to_pandas()
            subj_meta.append(sm.rename(columns={v: k for k, v in meta_cols.items()}).drop_duplicates("subject"))
        subj_meta.extend(_metadata_subjects(info.metadata))
        bad = _unused_frames(table, "invalid_reason" in has)
        if bad.num_rows:
            reasons.append(
                bad.group_by(["method", "input", "invalid_reason"]).aggregate([([], "count_all")]).to_pandas()
            )
        del table
        pairs = vid[["method", "input"]].drop_duplicates().itertuples(index=False)
        for m, i in pairs:
            missing.setdefault((str(m), str(i)), set()).update(c for c in OPTIONAL_COLUMNS if c not in has)
        info.methods = sorted(vid["method"].astype(str).unique())
        info.inputs = sorted(vid["input"].astype(str).unique())
        vids.append(vid)
        if len(mut):
            mutuals.append(mut)
    for info, h in zip(infos, hashes, strict=True):
        info.sha256 = h.result()
    if not [i for i in infos if i.status == "used"]:
        why = "; ".join(f"{Path(i.path).name}: {i.reason}" for i in infos)
        raise Gaze4HRIError(
            f"no usable results file ({why})",
            "analyze RESULTS",
            f"results need the columns {', '.join(CORE_COLUMNS)} (docs/results_schema.md)",
        )
    videos, duplicates, no_valid, mutual, inv, subjects = _assemble(vids, mutuals, reasons, subj_meta)
    return LoadedResults(
        videos=videos,
        mutual_frames=mutual,
        files=infos,
        missing=missing,
        no_valid=no_valid,
        duplicates=duplicates,
        invalid=inv,
        subjects=subjects,
    )
