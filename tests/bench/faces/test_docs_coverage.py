"""docs/pipeline_data.md documents every registered detector, crop rule, validity
reason and ground-truth column (a registration without documentation fails here)."""
from __future__ import annotations

import re

import pytest
from gaze4hri_bench.data.frame_truth import GT_COLUMNS
from gaze4hri_bench.data.validity import REASONS
from gaze4hri_bench.faces.crops import CROP_RULES
from gaze4hri_bench.faces.detectors import detector_names

pytestmark = pytest.mark.unit


def test_everything_registered_is_documented(repo_root):
    doc = (repo_root / "docs" / "pipeline_data.md").read_text()
    missing = [f"detector {n}" for n in detector_names() if f"`{n}`" not in doc]
    missing += [f"crop rule {n}" for n in CROP_RULES if f"`{n}`" not in doc]
    missing += [f"reason {n}" for n in REASONS if f"`{n}`" not in doc]
    # vector columns are documented by their stem (gt_x/y/z -> gt_, face_cx/cy/cz -> face_c, R_head_00 .. -> R_head_)
    stems = {re.sub(r"([xyz]|\d\d)$", "", c) for c in GT_COLUMNS}
    missing += [f"column {c}" for c in sorted(stems) if c not in doc]
    assert not missing, f"undocumented in docs/pipeline_data.md: {missing}"
