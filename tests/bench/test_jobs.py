"""Jobs planned once (pipeline/jobs.py) and the tables of the run on the core Registry
(engines, blink sources, output decoders): one error type and message form."""
from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest
from gaze4hri_core.registry import UnknownName

PIPELINE = Path(__file__).resolve().parents[2] / "src/gaze4hri_bench/gaze4hri_bench/pipeline"


def test_a_job_carries_its_spec_and_profile_record_and_the_method_is_built_from_them():
    from gaze4hri_bench.pipeline.jobs import plan_job
    from gaze4hri_bench.profiles import get_profile

    job = plan_job("l2cs", "best", "study", model=False)
    assert job.key == "l2cs_gaze360__crop" and job.profile == "study"
    assert job.record == get_profile("study").record("l2cs_gaze360")
    assert job.record.output == "l2cs_bins_first_as_pitch" and job.method.record is job.record
    assert job.method.spec is job.spec and job.spec.name == "l2cs_gaze360"
    assert "no_ray_correction" in job.setting_names and "gazetr_eth_rgb" not in job.setting_names
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.record = None  # type: ignore[misc]


def test_a_baseline_job_has_no_spec_and_no_record():
    from gaze4hri_bench.pipeline.jobs import plan_job

    job = plan_job("headpose", "crop", "study")
    assert (job.key, job.spec, job.record, job.model) == ("head_pose__none", None, None, None)


def test_a_given_spec_is_the_one_the_job_and_its_method_carry():
    """A user's spec (the coming YAML methods) reaches the method through the job."""
    from gaze4hri_bench.methods.testing import TINY_SPEC
    from gaze4hri_bench.pipeline.jobs import plan_job

    spec = dataclasses.replace(TINY_SPEC, size=48, colour="bgr")
    job = plan_job("tiny_test", "crop", None, spec=spec, model=False)
    assert job.spec is spec and job.method.spec is spec
    assert job.record.colour == "bgr"  # the reference record follows the spec's own settings


def test_plan_jobs_dedups_keys_and_resolves_each_model(tmp_path):
    from gaze4hri_bench.pipeline.jobs import RunConfig, plan_jobs

    cfg = RunConfig(methods=("straight", "camera", "head_pose"), data=tmp_path, out=tmp_path, input="both")
    assert [j.key for j in plan_jobs(cfg)] == ["straight__none", "head_pose__none"]


@pytest.mark.parametrize(("lookup", "line"), [
    (lambda: __import__("gaze4hri_bench.pipeline.jobs", fromlist=["ENGINES"]).ENGINES.get("rya"),
     "unknown engine 'rya' (--engine): did you mean ray? known: local, ray"),
    (lambda: __import__("gaze4hri_bench.faces.blinks", fromlist=["blink_source"]).blink_source("eer"),
     "unknown blink source 'eer' (--blinks): did you mean ear? known: auto, annotations, ear, sim, off"),
    (lambda: __import__("gaze4hri_bench.decoders", fromlist=["DECODERS"]).DECODERS.get("vector_c"),
     "unknown output rule 'vector_c' (MethodSpec.output): did you mean vector_b or vector_a? known: "),
])
def test_unknown_names_are_one_registry_line(lookup, line):
    with pytest.raises(UnknownName) as e:
        lookup()
    assert str(e.value).startswith(line)


def test_an_unknown_engine_stops_the_run_before_any_work(tmp_path):
    from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark

    cfg = RunConfig(methods=("straight",), data=tmp_path / "none", out=tmp_path / "out", engine="rya")
    with pytest.raises(UnknownName, match="unknown engine 'rya'"):
        run_benchmark(cfg, log=lambda *_: None)
    assert not (tmp_path / "out").exists()


def test_provenance_never_takes_an_unknown_blink_source_for_off():
    from types import SimpleNamespace

    from gaze4hri_bench.pipeline.results import _blinks

    assert _blinks(SimpleNamespace(blinks="off"))["source"] == "off"
    with pytest.raises(UnknownName, match="unknown blink source 'eer'"):
        _blinks(SimpleNamespace(blinks="eer"))


def _imports(path: Path) -> set[str]:
    """The pipeline modules ``path`` imports (relative imports, at any depth of the file)."""
    out = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom) and n.level == 1:
            out.update([n.module] if n.module else [a.name for a in n.names])
    return out


def test_the_engines_sit_below_the_run_and_no_pipeline_module_reads_settings_out_of_a_method():
    assert "run" not in _imports(PIPELINE / "engine.py") | _imports(PIPELINE / "engine_ray.py")
    for p in [*PIPELINE.glob("*.py"), PIPELINE.parent / "predict.py"]:
        assert not re.search(r"getattr\([^)]*[\"']settings[\"']", p.read_text()), p.name
