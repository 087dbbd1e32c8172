"""``gaze4hri-bench deviations`` with the real networks: every documented setting of a
profile alone (profile ``BASE:SETTING``), and the whole profile, run through the full
pipeline (``run_benchmark``) on the same sessions as ``reference``; per frame the angle
between the two predictions and the change in error, and per setting whether any
significant result of the report changes (stats.findings on the report's own analyses,
run on ``reference``'s results with the variant's files swapped in).

Only the methods a setting applies to are re-run; the others (and the weight-free
baselines, which every report compares against) keep ``reference``'s files. Runs live
under ``--runs`` and resume like ``gaze4hri-bench run``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from gaze4hri_core.errors import Gaze4HRIError

__all__ = ["Variant", "networks_present", "variants", "run_variants", "share_face_cache", "frame_effects",
           "significance_changes", "BASELINES"]

#: weight-free baselines run once under reference: every report compares against them
BASELINES = ("head_pose", "straight")


@dataclass(frozen=True)
class Variant:
    """One run: a label (the setting, or ``<profile> (all)``), the profile name handed
    to ``run --profile``, and the networks it re-runs."""

    label: str
    profile: str
    methods: tuple[str, ...]

    @property
    def folder(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", self.profile)


def networks_present(methods: list[str], models_dir: Path | None) -> tuple[dict[str, str], dict[str, Gaze4HRIError]]:
    """({method: "weights" | "random weights"} for the networks whose ONNX file is
    present, {method: the missing-weights error} for the others)."""
    from ..methods import get_entry, method_spec
    from .runtime import resolve_model

    present, missing = {}, {}
    for name in methods:
        if get_entry(name).kind != "onnx":
            continue
        try:
            mf = resolve_model(method_spec(name), models_dir)
        except Gaze4HRIError as e:
            missing[name] = e
            continue
        present[name] = "random weights" if (mf.record or {}).get("random_init") else "weights"
    return present, missing


def variants(profile: str, methods: list[str]) -> list[Variant]:
    """``reference``, each setting of ``profile`` that applies to one of ``methods`` (alone),
    then the whole profile."""
    from ..profiles import get_profile

    prof = get_profile(profile)
    out = [Variant("reference", "reference", tuple(methods))]
    for s in prof.settings:
        ms = tuple(methods) if s.methods == ("*",) else tuple(m for m in methods if m in s.methods)
        if ms:
            out.append(Variant(s.name, f"{prof.name}:{s.name}", ms))
    out.append(Variant(f"{prof.name} (all)", prof.name, tuple(methods)))
    return out


def run_variants(vs: list[Variant], data: Path, runs: Path, *, models_dir=None, device="auto", batch=8,
                 detector="auto", subjects=None, trials=None, data_format="auto", log=print,
                 progress: bool = False) -> dict[str, Path]:
    """Run every variant (the reference one with the baselines too); {label: folder}.
    ``progress``: `run`'s bars per job on stderr (a terminal). Before each setting one
    line gives the overall progress: setting k/N, elapsed, and the ETA from the mean
    time of the settings run so far (:func:`eta_line`)."""
    import time

    from .run import RunConfig, run_benchmark

    out = {}
    t0 = time.monotonic()
    for v in vs:
        folder = runs / v.folder
        if out:  # the first run's face tables (same detector and frames): detect once, not per setting
            share_face_cache(out[vs[0].label], folder)
        ms = v.methods + (BASELINES if v.profile == "reference" else ())
        log(f"deviations: {len(out) + 1}/{len(vs)} {v.label}: run --profile {v.profile} ({', '.join(v.methods)}); "
            + eta_line(len(out), len(vs), time.monotonic() - t0))
        cfg = RunConfig(methods=ms, data=data, out=folder, input="both", detector=detector,
                        subjects=tuple(subjects) if subjects else None, trials=tuple(trials) if trials else None,
                        device=device, batch=batch, models_dir=models_dir, progress=progress, data_format=data_format,
                        profile=v.profile, command_line=f"gaze4hri-bench deviations ({v.profile})")
        run_benchmark(cfg, log=lambda m: None)
        out[v.label] = folder
    return out


def _hms(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


def eta_line(done: int, total: int, elapsed_s: float) -> str:
    """"elapsed 02:10, about 06:30 left" after ``done`` of ``total`` settings (the mean
    time per setting so far times the settings left; a setting that resumes finished
    trials is quicker, so the estimate errs long); "ETA after the first setting" at 0."""
    if done <= 0:
        return f"elapsed {_hms(elapsed_s)}, ETA after the first setting"
    return f"elapsed {_hms(elapsed_s)}, about {_hms(elapsed_s / done * (total - done))} left"


def share_face_cache(src: Path, dst: Path) -> None:
    """Hard-link (else copy) the face tables of ``src``'s run into ``dst``'s cache; a
    table keyed by a profile's face rule is only reused by a run with the same rule."""
    import os
    import shutil

    s, d = src / ".cache" / "faces", dst / ".cache" / "faces"
    if not s.is_dir():
        return
    d.mkdir(parents=True, exist_ok=True)
    for f in s.glob("*.parquet"):
        if not (d / f.name).exists():
            try:
                os.link(f, d / f.name)
            except OSError:
                shutil.copy2(f, d / f.name)


_KEY = ["subject", "trial", "frame"]


def _read(path: Path) -> pd.DataFrame:
    cols = [*_KEY, "experiment", "valid", "pred_x", "pred_y", "pred_z", "error_deg"]
    return pd.read_parquet(path, columns=cols)


def frame_effects(ref: Path, var: Path, v: Variant, network: dict[str, str]) -> pd.DataFrame:
    """Per (method, input, experiment): frames both runs predicted, median / p95 / max of
    the angle between the two predictions (deg), mean error change (variant - reference,
    frames valid in both) and the valid frames of each run."""
    from gaze4hri_core.gaze import angular_error_deg

    rows = []
    for m in v.methods:
        for it in ("crop", "rectified"):
            fr, fv = ref / f"{m}__{it}.parquet", var / f"{m}__{it}.parquet"
            if not (fr.is_file() and fv.is_file()):
                continue
            j = _read(fr).merge(_read(fv), on=_KEY, suffixes=("_r", "_v"))
            for exp, g in j.groupby("experiment_r", sort=True):
                pr = g[["pred_x_r", "pred_y_r", "pred_z_r"]].to_numpy(float)
                pv = g[["pred_x_v", "pred_y_v", "pred_z_v"]].to_numpy(float)
                both = np.isfinite(pr).all(1) & np.isfinite(pv).all(1)
                ang = (np.asarray(angular_error_deg(pr[both], pv[both]), float).reshape(-1) if both.any()
                       else np.array([]))
                vb = g["valid_r"].to_numpy(bool) & g["valid_v"].to_numpy(bool)
                derr = (g["error_deg_v"] - g["error_deg_r"]).to_numpy(float)[vb]
                rows.append({"setting": v.label, "method": m, "input": it, "experiment": str(exp),
                             "network": network.get(m, "?"), "frames": int(both.sum()),
                             "median_deg": float(np.median(ang)) if ang.size else np.nan,
                             "p95_deg": float(np.percentile(ang, 95)) if ang.size else np.nan,
                             "max_deg": float(np.max(ang)) if ang.size else np.nan,
                             "error_change_deg": float(np.mean(derr)) if derr.size else np.nan,
                             "valid_reference": int(g["valid_r"].sum()), "valid_variant": int(g["valid_v"].sum())})
    return pd.DataFrame(rows)


def _result_set(ref: Path, var: Path | None, v: Variant | None) -> list[Path]:
    """reference's files with the variant's files in place of the methods it re-ran."""
    files = {p.name: p for p in sorted(ref.glob("*.parquet"))}
    if var is not None and v is not None:
        for p in sorted(var.glob("*.parquet")):
            if p.name.split("__")[0] in v.methods:
                files[p.name] = p
    return list(files.values())


def significance_changes(ref: Path, folders: dict[str, Path], vs: list[Variant], alpha: float = 0.05,
                         min_subjects: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per setting: findings tested / significant under reference / changed, or why not
    computed; every changed finding with its setting). The report's analyses under the
    ``reference`` analysis profile, on reference's results and on each variant's set."""
    from ..stats import plan as P
    from ..stats.findings import changed_findings, findings

    def run(files: list[Path]):
        pre = P.prepare(files, alpha, "reference", None, min_subjects, allow_mixed=True)
        return findings(P.run_analyses(pre.ctx), alpha)

    base = run(_result_set(ref, None, None))
    summary, changes = [], []
    for v in vs:
        if v.profile == "reference":
            continue
        if base.empty:
            summary.append({"setting": v.label, "tested": 0, "significant_reference": 0, "changed": np.nan,
                            "note": f"no test ran (fewer than {min_subjects} subjects, or no method pairs)"})
            continue
        ch = changed_findings(base, run(_result_set(ref, folders[v.label], v)))
        summary.append({"setting": v.label, "tested": len(base),
                        "significant_reference": int(base["significant"].sum()), "changed": len(ch), "note": ""})
        if len(ch):
            changes.append(ch.assign(setting=v.label))
    ch = pd.concat(changes, ignore_index=True) if changes else pd.DataFrame(
        columns=["analysis", "table", "key", "change", "p_reference", "p_variant", "setting"])
    return pd.DataFrame(summary), ch[["setting", "analysis", "table", "key", "change", "p_reference", "p_variant"]]
