"""A frame without ground truth is invalid with its reason (issue 24, item 5): `run`
once counted a frame valid whose ground-truth gaze was NaN (2431 valid in `run`, 2430
in the report, which drops a NaN error). Now the run's log, the results rows and the
report's loader count the same valid frames, and the frame says ``no_ground_truth``."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from gaze4hri_bench.pipeline.run import NO_GROUND_TRUTH, RunConfig, run_benchmark

from ._synth import SynthDataset


class _LastFrameWithoutTruth(SynthDataset):
    """Frame 11 of every trial is valid by the data's masks but has no ground-truth gaze
    (as the last frame of a trial whose next head-band pose never came)."""

    def trial_ground_truth(self, ref):
        gt = super().trial_ground_truth(ref)
        gt.loc[gt["frame"] == 11, ["gt_x", "gt_y", "gt_z", "gt_pitch_deg", "gt_yaw_deg"]] = np.nan
        return gt


@pytest.mark.unit
def test_a_frame_without_ground_truth_is_invalid_and_counted_once(tmp_path):
    ds = _LastFrameWithoutTruth(subjects=("S01",), trials=("illum100_P5",))
    lines: list[str] = []
    cfg = RunConfig(methods=("straight",), data=Path("/synthetic"), out=tmp_path, progress=False,
                    command_line="gaze4hri-bench run --data /synthetic")
    (path,) = run_benchmark(cfg, log=lines.append, dataset=ds)
    df = pd.read_parquet(path)
    row = df[df["frame"] == 11].iloc[0]
    assert not row["valid"] and row["invalid_reason"] == NO_GROUND_TRUTH and np.isnan(row["error_deg"])
    valid = int(df["valid"].sum())
    assert valid == 12 - 2 == int(np.isfinite(df["error_deg"]).sum())  # frame 2 is a blink, frame 11 has no truth
    said = next(m for m in lines if "frames valid" in m)
    m = re.search(rf"\b{valid} of 12 frames valid \(removed: ([^)]*)\)", said)
    assert m and sorted(m.group(1).split(", ")) == ["blink 1", "no_ground_truth 1"], said
    from gaze4hri_bench.stats.load import load_results

    lr = load_results([path])
    inv = lr.invalid.set_index("reason")["frames"]
    assert inv.get(NO_GROUND_TRUTH) == 1 and "error_not_finite" not in inv.index  # the report lists it by its reason
