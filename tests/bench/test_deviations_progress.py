"""``gaze4hri-bench deviations`` on a long dataset (issue 24, item 5): the ground-truth
pass shows `run`'s overall progress (trials i/N, frames, rate, ETA), the per-setting
runs an overall "setting k/N, elapsed, about T left" line, and Ctrl-C ends with how to
resume and exit code 130."""
from __future__ import annotations

from pathlib import Path

import pytest
from gaze4hri_bench.pipeline import deviations as D
from gaze4hri_bench.pipeline.deviations_real import eta_line

from ._synth import SynthDataset as _Base


class SynthDataset(_Base):
    """The run-loop test dataset plus the eye midpoint the oracle needs."""

    def trial_ground_truth(self, ref):
        gt = super().trial_ground_truth(ref)
        gt["eye_cx"], gt["eye_cy"], gt["eye_cz"] = 0.02, -0.01, 0.6
        return gt


@pytest.mark.unit
def test_ground_truth_pass_has_runs_overall_bar(capsys):
    ds = SynthDataset(subjects=("S01",), trials=("illum100_P5", "mutual_h_fast"))
    truths = D.trial_truths(ds, ds.trials(), progress=True)
    err = capsys.readouterr().err
    assert len(truths) == 2
    assert "deviations: ground truth trial 2/2" in err and "<" in err and "frame/s" in err  # elapsed<ETA, rate


@pytest.mark.unit
def test_eta_line():
    assert eta_line(0, 5, 3.0) == "elapsed 00:03, ETA after the first setting"
    assert eta_line(2, 5, 120.0) == "elapsed 02:00, about 03:00 left"
    assert eta_line(1, 3, 4000.0) == "elapsed 1:06:40, about 2:13:20 left"


@pytest.mark.unit
def test_ctrl_c_says_how_to_resume(tmp_path, capsys, monkeypatch):
    from gaze4hri_bench.data import reader

    from gaze4hri_bench import cli

    class _DS(SynthDataset):
        def __init__(self, *a, **k):
            super().__init__(subjects=("S01",), trials=("illum100_P5",))

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(reader, "Dataset", _DS)
    monkeypatch.setattr(D, "deviation_table", interrupted)  # Ctrl-C after the ground-truth pass
    (tmp_path / "data").mkdir()
    rc = cli.main(
        [
            "deviations",
            "--data",
            str(tmp_path / "data"),
            "--network",
            "off",
            "-m",
            "puregaze_eth",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 130
    assert (
        "re-run the same command to resume; "
        f"the finished per-setting runs under {Path(tmp_path / 'o' / 'runs')} are kept"
        in err
    )
