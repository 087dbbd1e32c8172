"""stats.findings and deviations' "does a setting change a significant result": the
report's own analyses on synthetic results, then on the same results with one method's
file swapped for a variant's."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from gaze4hri_bench.pipeline.deviations_real import Variant, significance_changes
from gaze4hri_bench.stats import plan as P
from gaze4hri_bench.stats.findings import changed_findings, findings

pytestmark = pytest.mark.unit


def _analyses(folder):
    pre = P.prepare(sorted(folder.glob("*.parquet")), 0.05, "reference", None, 3, allow_mixed=True)
    return P.run_analyses(pre.ctx)


def test_findings_are_keyed_once_and_follow_alpha(small_results):
    an = _analyses(small_results)
    f = findings(an, 0.05)
    assert len(f) > 100 and f["significant"].any() and (~f["significant"]).any()
    assert not f.duplicated(["analysis", "table", "key"]).any()
    assert (f["significant"] == (f["p"] < 0.05)).all()
    assert {"illumination_pairwise", "viewpoint", "conflict_pairwise", "crop_vs_rectified"} <= set(f["table"])
    strict = findings(an, 1e-9)
    assert strict["significant"].sum() < f["significant"].sum()


def test_changed_findings_names_flips_and_reversals():
    import pandas as pd

    ref = pd.DataFrame(
        {
            "analysis": ["a"] * 4,
            "table": ["t"] * 4,
            "key": ["k1", "k2", "k3", "k4"],
            "p": [0.01, 0.2, 0.01, 0.01],
            "significant": [True, False, True, True],
            "direction": [1, 1, 1, -1],
        }
    )
    var = ref.copy()
    var.loc[0, ["p", "significant"]] = [0.3, False]  # lost
    var.loc[1, ["p", "significant"]] = [0.001, True]  # gained
    var.loc[2, "direction"] = -1  # reversed
    ch = changed_findings(ref, var).set_index("key")["change"]
    assert ch.to_dict() == {
        "k1": "significant -> not significant",
        "k2": "not significant -> significant",
        "k3": "significant, direction reversed",
    }
    assert changed_findings(ref, ref).empty


def _variant_copy(src, dst, name, shift_deg):
    """dst/<name> = src/<name> with every valid frame's error raised by shift_deg (metadata kept)."""
    t = pq.read_table(src / name)
    err = t.column("error_deg").to_numpy(zero_copy_only=False)
    t = t.set_column(
        t.schema.get_field_index("error_deg"), "error_deg", pa.array(np.where(np.isfinite(err), err + shift_deg, err))
    )
    dst.mkdir(parents=True, exist_ok=True)
    pq.write_table(t, dst / name)


def test_a_setting_that_moves_one_method_changes_significant_results(small_results, tmp_path):
    """An identical variant changes nothing; one that makes PureGaze (E) 25 deg worse on
    both inputs flips its method comparisons, and the changes name it (a few other
    results of its Holm families may follow: the correction is over the family)."""
    same, worse = tmp_path / "same", tmp_path / "worse"
    for name in ("puregaze_eth__crop.parquet", "puregaze_eth__rectified.parquet"):
        (same).mkdir(exist_ok=True)
        shutil.copy2(small_results / name, same / name)
        _variant_copy(small_results, worse, name, 25.0)
    vs = [
        Variant("reference", "reference", ()),
        Variant("same", "study:x", ("puregaze_eth",)),
        Variant("worse", "study:y", ("puregaze_eth",)),
    ]
    summ, changes = significance_changes(small_results, {"reference": small_results, "same": same, "worse": worse}, vs)
    s = summ.set_index("setting")
    assert s.loc["same", "changed"] == 0 and s.loc["worse", "changed"] > 0
    assert s.loc["worse", "tested"] == s.loc["same", "tested"] > 100
    w = changes[changes["setting"] == "worse"]
    assert len(w) == s.loc["worse", "changed"]
    # nearly all name it; a few others move with it through their shared Holm family
    assert w["key"].str.contains("puregaze_eth").mean() > 0.9
    assert (w["change"] == "not significant -> significant").any()
