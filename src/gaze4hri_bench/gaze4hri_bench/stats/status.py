"""What the report's status box says: simulated or real data, weights per method (RANDOM
flagged), face detector, blink source and pipeline profile, from the results' provenance
(Parquet metadata ``gaze4hri``, docs/pipeline.md "Provenance").

The acquisition backend is read from the provenance key ``data_source``
(``{"backends": {subject: "sim" | "real" | ...}, "format": "session" | "study"}``) when
the pipeline wrote it; results without it are judged from what they do carry (a
``sim`` blink source, the demo command line, a synthetic-results generator) and say
how they were judged, or "unknown".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pandas as pd

from .figures import is_baseline
from .load import pipeline_profile

__all__ = ["Status", "data_kind", "weights_text", "build_status"]

#: Acquisition backends that are not a person in front of the rig.
SIMULATED = frozenset({"sim", "simulated", "synthetic", "fake"})


@dataclass
class Status:
    """The status box: one line per topic, the per-method table and the alarms (RANDOM, simulated)."""

    data: str
    simulated: bool | None
    pipeline_profiles: list[str]
    detectors: list[str]
    blinks: list[str]
    methods: pd.DataFrame
    alarms: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [
            f"Data: {self.data}",
            f"Pipeline profile: {', '.join(self.pipeline_profiles) or 'reference'}",
            f"Face detector: {', '.join(self.detectors) or 'none (no cropped or rectified input)'}",
            f"Blink source: {', '.join(self.blinks) or 'not recorded'}",
        ]


def data_kind(meta: dict | None) -> tuple[str, str]:
    """(``simulated`` | ``real`` | ``mixed`` | ``unknown``, how we know) for one results file's provenance."""
    md = meta or {}
    ds = md.get("data_source")
    if isinstance(ds, dict) and ds.get("backends"):
        b = ds["backends"]
        kinds = sorted(set(b.values()) if isinstance(b, dict) else set(map(str, b)))
        sim = any(k in SIMULATED for k in kinds)
        real = any(k not in SIMULATED for k in kinds)
        what = f"acquisition backend {', '.join(kinds)}" + (f" ({ds['format']} layout)" if ds.get("format") else "")
        return ("mixed" if sim and real else "simulated" if sim else "real"), what
    if isinstance(ds, dict) and ds.get("format") == "study":
        return "real", "the study's released recordings"
    sw = md.get("software")
    if isinstance(sw, dict) and "synthetic" in json.dumps(sw):
        return "simulated", f"synthetic results ({sw.get('generator', 'generator')})"
    blinks = md.get("blinks") if isinstance(md.get("blinks"), dict) else {}
    if blinks.get("source") == "sim":
        return "simulated", "blink truth taken from the simulator (--blinks sim)"
    cmd = str(md.get("command_line") or "")
    if " demo" in f" {cmd}" and "gaze4hri-bench" in cmd:
        return "simulated", "written by 'gaze4hri-bench demo', which records simulated sessions"
    return "unknown", "not recorded in the results (no data_source key)"


def weights_text(meta: dict | None, method: str) -> tuple[str, bool]:
    """(what the weights are, RANDOM?) for one results file."""
    md = meta or {}
    kind = (md.get("method_info") or {}).get("kind") if isinstance(md.get("method_info"), dict) else None
    if kind == "baseline" or is_baseline(method):
        return "none (weight-free baseline)", False
    w = md.get("weights")
    if isinstance(w, dict):
        if w.get("random_init"):
            return f"RANDOM (random initialisation, {w.get('file') or 'no file'}): not a trained network", True
        ver = "verified" if w.get("verified") else "NOT verified against the registry hash"
        sha = str(w.get("onnx_sha256") or md.get("weights_sha256") or "")[:12]
        ck = f"; checkpoint {w['checkpoint']}" if w.get("checkpoint") else ""
        return f"{w.get('file') or 'ONNX'} ({ver}{', sha256 ' + sha if sha else ''}{ck})", False
    if md.get("weights_sha256"):
        return f"sha256 {str(md['weights_sha256'])[:12]}", False
    return "not recorded", False


def build_status(files: list, pipeline_profiles: list[str]) -> Status:
    """The status box from the loaded files (stats.load.FileInfo: path, methods, inputs, metadata, status)."""
    used = [f for f in files if getattr(f, "status", "used") == "used"]
    rows, alarms, sims, hows, detectors, blinks = [], [], [], [], set(), set()
    for f in used:
        md = f.metadata or {}
        method = str(md.get("method") or ",".join(f.methods))
        inp = str(md.get("input") or ",".join(f.inputs))
        w, random = weights_text(md, method)
        sim, how = data_kind(md)
        sims.append(sim)
        hows.append(how)
        det = md.get("detector")
        if det:
            detectors.add(str(det))
        b = md.get("blinks")
        if isinstance(b, dict) and b.get("detector") and b.get("ear_relative", b.get("ear_threshold")) is not None:
            detectors.add(f"{b['detector']} (face pass for the blink EAR)")
        if isinstance(b, dict) and b.get("source"):
            blinks.add(str(b["source"]) + (f" ({b['rule']})" if b.get("rule") else ""))
        from .analyses import display_name

        rows.append(
            {
                "display": display_name(method),
                "input": inp,
                "weights": w,
                "detector": str(det or "none"),
                "profile": pipeline_profile(md),
                "data": sim,
            }
        )
        if random:
            alarms.append(
                f"RANDOM WEIGHTS: {display_name(method)} ({inp}) ran with randomly initialised weights; its errors "
                "say nothing about the method."
            )
    if rows:
        from .layouts import _order

        rank = {
            m: k
            for k, m in enumerate(_order([str((f.metadata or {}).get("method") or ",".join(f.methods)) for f in used]))
        }
        keyed = sorted(
            zip(rows, used, strict=True),
            key=lambda rf: (
                rank.get(str((rf[1].metadata or {}).get("method") or ",".join(rf[1].methods)), 99),
                rf[0]["input"],
            ),
        )
        rows = [r for r, _f in keyed]
    if used and all(s == "simulated" for s in sims):
        data, simulated = "SIMULATED (" + "; ".join(sorted(set(hows))) + ")", True
        alarms.insert(
            0,
            "SIMULATED DATA: these results are simulated, not recordings of people; they test the software, not the "
            "methods.",
        )
    elif used and all(s == "real" for s in sims):
        data, simulated = "real recordings (" + "; ".join(sorted(set(hows))) + ")", False
    elif any(s in ("simulated", "mixed") for s in sims):
        data, simulated = "MIXED: some results simulated (" + "; ".join(sorted(set(hows))) + ")", None
        alarms.insert(0, "MIXED DATA: some results come from simulated sessions.")
    else:
        data, simulated = "unknown: " + "; ".join(sorted(set(hows))), None
    return Status(
        data,
        simulated,
        list(pipeline_profiles) or ["reference"],
        sorted(detectors),
        sorted(blinks),
        pd.DataFrame(rows, columns=["display", "input", "weights", "detector", "profile", "data"]),
        alarms,
    )
