"""Issue 23 item 4: the ETH-XGaze HDF5 export opened as ETH-XGaze's own loader opens it
(xucong-zhang/ETH-XGaze data_loader.py, restated here, no code copied): the split file
``<dir>/train_test_split.json`` names the keys of a split (31-42, 54-65); each file is
opened at ``<dir>/<sub_folder>/<key>`` read-only with ``swmr=True`` and must be in SWMR
mode (86-89, 125-126); items are ``face_patch[idx]`` reversed from BGR to RGB and
``face_gaze[idx]`` as float (129-137). The labels map back to our ground truth."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from gaze4hri_bench.data.reader import Dataset
from gaze4hri_bench.export.ethxgaze import export_ethxgaze
from gaze4hri_core.gaze import angular_error_deg, pitchyaw_to_vector

pytestmark = pytest.mark.replay


def eth_items(data_dir, sub_folder):
    """(image RGB, gaze label) pairs of one split, opened the way ETH-XGaze's GazeDataset does."""
    h5py = pytest.importorskip("h5py")
    with open(os.path.join(data_dir, "train_test_split.json")) as f:
        keys = json.load(f)[sub_folder]
    assert len(keys) > 0  # ETH-XGaze asserts a non-empty key list
    out = []
    for key in keys:
        with h5py.File(os.path.join(data_dir, sub_folder, key), "r", swmr=True) as hdf:
            assert hdf.swmr_mode
            for i in range(hdf["face_patch"].shape[0]):
                out.append((hdf["face_patch"][i, :][:, :, [2, 1, 0]], hdf["face_gaze"][i, :].astype("float"),
                            hdf["face_mat_norm"][i], hdf["trial"][i], int(hdf["frame_index"][i, 0])))
    return out


@pytest.mark.parametrize("split", ["train", "test"])
def test_eth_xgaze_loader_reads_the_export(sessions, tmp_path, split):
    out = tmp_path / "xgaze"
    res = export_ethxgaze(sessions, out, subjects=["S01"], trials=["arc_P1"], stride=3, log=lambda s: None,
                          test_subjects=("S01",) if split == "test" else ())
    assert (out / split / "subjectS01.h5").is_file() and not (out / "subjectS01.h5").exists()
    items = eth_items(out, split)
    ds = Dataset(sessions, subjects=["S01"], trials=["arc_P1"], stride=3)
    gt = ds.trial_ground_truth(ds.trials()[0]).set_index("frame")
    assert len(items) == res.counts["S01"] == int(gt["valid"].sum()) > 5
    img, _g, _R, _t, _k = items[0]
    assert img.shape == (224, 224, 3) and img.dtype == np.uint8 and img.std() > 10
    g = np.array([it[1] for it in items])
    R = np.array([it[2] for it in items], float)
    g_cam = np.einsum("nji,nj->ni", R, pitchyaw_to_vector(g[:, 0], g[:, 1]))
    truth = gt.loc[[it[4] for it in items], ["gt_x", "gt_y", "gt_z"]].to_numpy(float)
    assert np.max(angular_error_deg(g_cam, truth)) < 0.01
