"""Per-frame results files: one Parquet file per (method, input type), one row per
frame (schema.COLUMNS), provenance as JSON under the Parquet key-value metadata key
``schema.METADATA_KEY`` (docs/results_schema.md, docs/pipeline.md).

Trials are first written as part files (atomic rename) under
``<out>/.parts/<method>__<input>/``; a finished part is never recomputed (resume).
Merging streams the parts one by one into the final file (never all rows in memory).
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..schema import COLUMNS, METADATA_KEY, SCHEMA_VERSION

__all__ = ["coerce", "arrow_schema", "parts_dir", "part_path", "write_part", "read_part_timing", "merge",
           "result_path", "read_metadata", "PART_KEY", "check_profile"]

PART_KEY = b"gaze4hri_part"  # per-trial timing in part files

_ARROW = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}


def arrow_schema(metadata: dict | None = None) -> pa.Schema:
    fields = [pa.field(c, _ARROW[dt]) for c, (dt, _) in COLUMNS.items()]
    md = {METADATA_KEY: json.dumps(metadata, default=_json_default).encode()} if metadata is not None else None
    return pa.schema(fields, metadata=md)


def coerce(df: pd.DataFrame) -> pd.DataFrame:
    """Columns in schema order with schema dtypes (missing columns raise)."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"results rows lack columns {missing}")
    out = df[list(COLUMNS)].copy()
    for c, (dt, _) in COLUMNS.items():
        out[c] = out[c].astype(dt)
    return out


def parts_dir(out: Path, method: str, input_type: str) -> Path:
    return Path(out) / ".parts" / f"{method}__{input_type}"


def part_path(parts: Path, subject: str, trial: str) -> Path:
    return parts / f"{subject}__{trial}.parquet"


def result_path(out: Path, method: str, input_type: str) -> Path:
    return Path(out) / f"{method}__{input_type}.parquet"


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _write_atomic(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_part(path: Path, df: pd.DataFrame, timing: dict) -> Path:
    """One finished trial, with its timing in the part's metadata (atomic)."""
    schema = arrow_schema().with_metadata({PART_KEY: json.dumps(timing, default=_json_default).encode()})
    table = pa.Table.from_pandas(coerce(df), schema=schema, preserve_index=False)
    _write_atomic(table, path)
    return path


def read_part_timing(path: Path) -> dict:
    md = pq.read_schema(path).metadata or {}
    return json.loads(md.get(PART_KEY, b"{}"))


def check_profile(parts: Path, profile: str) -> None:
    """Refuse to resume into part files made under another pipeline profile (one
    results folder holds one profile; parts without the key are ``reference``)."""
    from gaze4hri_core.errors import Gaze4HRIError

    for p in sorted(Path(parts).glob("*.parquet")) if Path(parts).is_dir() else []:
        got = read_part_timing(p).get("profile") or "reference"
        if got != profile:
            raise Gaze4HRIError(f"{p.parent} holds trials run with pipeline profile {got!r}, "
                                f"this run asks for {profile!r}", "--profile",
                                f"use another --out for profile {profile}, or run again with --profile {got}")
        return


def _timing(parts: list[Path]) -> tuple[dict, dict]:
    keys = ("frames", "decode_s", "gt_s", "detect_s", "preprocess_s", "infer_s", "write_s", "wall_s")
    tot = dict.fromkeys(keys, 0.0)
    peak_rss, peak_vram, device, batch, streams, threads, cal = 0.0, None, None, None, None, None, {}
    subjects: dict[str, dict] = {}
    backends: dict[str, str] = {}  # subject -> acquisition backend (sim, real, study)
    reasons: dict[str, int] = {}
    excluded: dict[str, str] = {}
    cams: dict[str, dict] = {}  # subject__trial -> camera pose sources' disagreement (run.camera_source_summary)
    shared: set[str] = set()  # jobs that read the same decode (run.py, decode once)
    for p in parts:
        t = read_part_timing(p)
        shared.update(t.get("shared_with") or [])
        if t.get("excluded"):
            excluded[p.stem] = t["excluded"]
        if t.get("camera_sources"):
            cams[p.stem] = t["camera_sources"]
        for k, v in (t.get("reasons") or {}).items():
            reasons[k] = reasons.get(k, 0) + int(v)
        for k in keys:
            tot[k] += float(t.get(k) or 0.0)
        peak_rss = max(peak_rss, float(t.get("peak_rss_mb") or 0.0))
        if t.get("peak_vram_mb") is not None:
            peak_vram = max(peak_vram or 0.0, float(t["peak_vram_mb"]))
        device = t.get("device", device)
        batch = t.get("batch", batch)
        streams, threads = t.get("streams", streams), t.get("threads", threads)
        subj = p.name.split("__")[0]
        if t.get("calibration_hashes"):
            cal[subj] = t["calibration_hashes"]
        if t.get("subject_info"):
            subjects[subj] = t["subject_info"]
        if t.get("data_backend"):
            backends[subj] = str(t["data_backend"])
    frames = int(tot["frames"])
    timing = {
        "frames": frames,
        "decode_s": round(tot["decode_s"], 4), "gt_s": round(tot["gt_s"], 4), "detect_s": round(tot["detect_s"], 4),
        "preprocess_s": round(tot["preprocess_s"], 4), "infer_s": round(tot["infer_s"], 4),
        "write_s": round(tot["write_s"], 4), "wall_s": round(tot["wall_s"], 4),
        # decode, gt and detect were spent once per trial for this job and these (not once per job)
        "shared_with": sorted(shared),
        "infer_ms_per_frame": round(1000 * tot["infer_s"] / frames, 4) if frames else None,
        "fps": round(frames / tot["wall_s"], 3) if tot["wall_s"] > 0 else None,
        "peak_rss_mb": round(peak_rss, 1), "peak_vram_mb": peak_vram, "device": device, "batch": batch,
        "streams": streams, "threads": threads,  # --streams / --threads as chosen (runtime.resolve_streams)
        "reasons": reasons,
        "excluded_trials": excluded,
    }
    timing["data_backends"] = backends
    timing["camera_sources"] = cams
    if subjects:
        timing["subjects"] = subjects  # subject metadata (e.g. glasses, gender) for grouped analyses
    return timing, cal


def provenance(job, cfg, parts: list[Path]) -> dict:
    """The metadata of one results file (docs/pipeline.md, "Provenance")."""
    from gaze4hri_core.session import software_info

    from ..methods.plugins import spec_source
    from ..spec_file import spec_hash

    sw = software_info()
    timing, cal = _timing(parts)
    m = job.method
    spec = dataclasses.asdict(job.spec) if job.spec is not None else None
    weights = None
    if job.model is not None:
        rec = job.model.record or {}
        weights = {"file": job.model.path.name, "onnx_sha256": job.model.sha256, "verified": job.model.verified,
                   "random_init": job.model.random_init, "checkpoint": rec.get("checkpoint"),
                   "checkpoint_sha256": rec.get("checkpoint_sha256")}
    return {
        "schema": SCHEMA_VERSION,
        "method": m.name,
        "input": job.input_type,
        "software": sw["version"],
        "git": sw["git"],
        "spec": spec,
        # the spec's canonical hash and, for a spec file, where it was read (spec_file.spec_hash)
        "spec_sha256": spec_hash(job.spec) if job.spec is not None else None,
        "spec_file": spec_source(m.name) if job.spec is not None else None,
        "method_info": m.describe(),
        "weights_sha256": job.model.sha256 if job.model is not None else None,
        "weights": weights,
        "calibration_hashes": cal,
        "detector": cfg.detector if m.needs_face(job.input_type) else None,
        "profile": job.profile,
        "profile_settings": {"record": dataclasses.asdict(job.record) if job.record is not None else None,
                             "settings": list(job.setting_names)},
        "frame_correction": _frame_correction(job.record, job.input_type),
        "stride": cfg.stride,
        "blinks": _blinks(cfg),
        "command_line": cfg.command_line or " ".join(sys.argv),
        "excluded_trials": timing.pop("excluded_trials", {}),  # subject__trial -> why the profile dropped it
        # subject -> metadata (study: subject_info.json; docs/results_schema.md)
        "subjects": timing.pop("subjects", {}),
        # subject -> sim/real/study: the report's status box
        "data_source": {"backends": timing.pop("data_backends", {})},
        # subject__trial -> FK vs camera rigid body (issue 13): the report's data section
        "camera_sources": timing.pop("camera_sources", {}),
        "timing": timing,
    }


def _frame_correction(rec, input_type: str) -> str:
    """How a prediction was mapped to the camera frame under the job's profile record."""
    if input_type == "crop":
        return "camera->face ray through the box centre" if rec is None or rec.ray_correction else "none (study)"
    if input_type == "rectified":
        return "R_norm^T" if rec is None or rec.denorm == "rotation" else "M^-1 = R^T S^-1 (study)"
    return "none"


def _blinks(cfg) -> dict:
    """How the ``blink`` reason was decided (faces.blinks.BLINK_SOURCES)."""
    from ..faces.blinks import blink_source

    src = blink_source(cfg.blinks)  # an unknown source is one line (never taken for "off")
    out = {"source": src.name, "rule": src.help}
    if src.ear:
        out.update(ear_relative=cfg.ear_relative, ear_threshold=cfg.ear_threshold, detector=cfg.detector,
                   ear_pass=cfg.ear_pass)
    return out


def merge(out: Path, job, parts: list[Path], cfg) -> Path:
    """Stream the part files into ``<out>/<method>__<input>.parquet`` (atomic)."""
    path = result_path(out, job.method.name, job.input_type)
    schema = arrow_schema(provenance(job, cfg, parts))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with pq.ParquetWriter(tmp, schema, compression="zstd") as w:
            for p in parts:
                t = pq.read_table(p).replace_schema_metadata(None)
                for f in schema.remove_metadata():  # a part written before a column was added (cam_world_*): nulls
                    if f.name not in t.column_names:
                        t = t.append_column(f, pa.nulls(t.num_rows, f.type))
                t = t.select(schema.names)
                w.write_table(t.cast(schema.remove_metadata()).replace_schema_metadata(schema.metadata))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def read_metadata(path: str | Path) -> dict:
    """The provenance JSON of a results file."""
    md = pq.read_schema(path).metadata or {}
    return json.loads(md[METADATA_KEY])
