"""`ddp-doctor report`: the JSON contract, text and HTML in both languages, input errors."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.core.catalog import FINDINGS, HYPOTHESES, runtime_ids
from ddp_doctor.core.findings import REPORT_SCHEMA

runner = CliRunner()


def _report(*args: str):
    return runner.invoke(app, ["report", *args])


def test_json_follows_the_catalog_contract(make_run):
    res = _report(str(make_run(faults=("sched-per-micro",))), "--format", "json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["schema"] == REPORT_SCHEMA
    for key in (
        "world_size",
        "optimizer_steps",
        "micro_steps_per_optimizer_step",
        "effective_batch",
        "settings",
        "problems",
    ):
        assert key in data["run"]
    assert data["run"]["effective_batch"]["samples"] == 8
    assert {"ddp", "optimizer", "sampler"} <= set(data["run"]["settings"])
    by_id = {f["id"]: f for f in data["findings"]}
    assert set(runtime_ids()) <= set(by_id)
    for f in data["findings"]:
        assert set(f) >= {"id", "status", "severity", "summary", "evidence", "fix"}
    assert by_id["scheduler-per-microstep"]["status"] == "confirmed"
    assert [h["id"] for h in data["hypotheses"]] == list(HYPOTHESES)
    for h in data["hypotheses"]:
        assert set(h) == {"id", "verdict", "findings", "summary"}
        assert h["findings"] == list(HYPOTHESES[h["id"]].findings)


def test_json_is_strict_json_even_with_nan_in_the_run(make_run):
    res = _report(str(make_run(faults=("nonfinite",))), "--format", "json")
    json.loads(res.stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


def test_text_shows_the_hypothesis_table_first_then_findings(make_run):
    res = _report(str(make_run(faults=("loss-unscaled",))))
    assert res.exit_code == 0
    out = res.stdout
    start = out.index("Confirmed findings")
    assert out.index("Hypothesis") < start
    assert "error accum-loss-unscaled:" in out[start:]
    assert "accumulation-sync" in out and "confirmed" in out


def test_zh_renders_chinese_text(make_run, tmp_path):
    path = make_run(faults=("loss-unscaled",))
    text = _report(str(path), "--lang", "zh").stdout
    assert "假设" in text and "已确认" in text and "损失没有除以累积步数" in text
    data = json.loads(_report(str(path), "--format", "json", "--lang", "zh").stdout)
    assert any("累积" in f["summary"] for f in data["findings"] if f["id"] == "accum-loss-unscaled")
    out = tmp_path / "r.html"
    _report(str(path), "--format", "html", "--lang", "zh", "--output", str(out))
    assert '<html lang="zh-CN">' in out.read_text(encoding="utf-8")


def test_html_is_self_contained_and_escapes_run_strings(make_run, tmp_path):
    path = make_run(faults=("unused",))
    rank0 = path / "ranks" / "rank-00000.jsonl"
    rank0.write_text(rank0.read_text().replace("lm_head.bias", "<script>alert(1)</script>"))
    out = tmp_path / "r.html"
    res = _report(str(path), "--format", "html", "--output", str(out))
    assert res.exit_code == 0, res.output
    page = out.read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "no external resources"
    assert page.count("<svg") >= 4
    assert page.count("<script>") == 1  # the page's own toggle, nothing from the run


def test_html_defaults_to_a_file_in_the_run_directory(make_run):
    path = make_run(steps=40)
    res = _report(str(path), "--format", "html")
    assert res.exit_code == 0
    assert (path / "report.html").exists()


def test_missing_empty_or_non_run_directory_exits_2(tmp_path):
    for p in (tmp_path / "missing", tmp_path):
        res = _report(str(p))
        assert res.exit_code == 2
        assert "error:" in res.output
    f = tmp_path / "file.txt"
    f.write_text("x")
    assert _report(str(f), "--format", "json").exit_code == 2


def test_bad_flags_exit_2(make_run):
    path = str(make_run(steps=30))
    assert _report(path, "--format", "pdf").exit_code == 2
    assert _report(path, "--lang", "fr").exit_code == 2


def test_partial_run_reports_what_is_missing(make_run):
    from fixtures.synth_run import damage

    path = make_run(world_size=3, steps=60, ended=False)
    damage(path, drop_rank=1, truncate_rank=2, drop_end=True)
    res = _report(str(path))
    assert res.exit_code == 0
    assert "missing for rank(s) 1" in res.stdout
    assert "truncated" in res.stdout
    assert "still in progress" in res.stdout


def test_every_catalog_id_has_a_status_in_text_output(make_run):
    out = _report(str(make_run())).stdout
    for fid in FINDINGS:
        assert fid in out
