"""`ddp-doctor lint`: exit codes, formats, --select/--ignore, --lang, --fix."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.core.catalog import FINDINGS
from ddp_doctor.lint.engine import lint_file

CORPUS = Path(__file__).parent / "corpus"
runner = CliRunner()


def _lint(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["lint", *args])
    return result.exit_code, result.output


def test_exit_0_when_clean() -> None:
    assert _lint(str(CORPUS / "set-epoch-missing" / "good_set_epoch.py"))[0] == 0


def test_exit_1_on_error_or_warning_findings() -> None:
    assert _lint(str(CORPUS / "zero-grad-inside-accum" / "bad_nested_loop.py"))[0] == 1
    assert _lint(str(CORPUS / "rank0-only-loss-log" / "bad_print_rank0.py"))[0] == 1


def test_exit_0_when_only_info_findings() -> None:
    code, out = _lint(str(CORPUS / "find-unused-true" / "bad_ddp_kwarg.py"))
    assert code == 0 and "find-unused-true" in out


@pytest.mark.parametrize(
    "args",
    [
        ["does/not/exist.py"],
        ["--select", "no-such-rule", "."],
        ["--format", "xml", "."],
        ["--lang", "fr", "."],
    ],
)
def test_exit_2_on_usage_errors(args: list[str]) -> None:
    assert _lint(*args)[0] == 2


def test_exit_2_on_a_file_that_does_not_parse_but_other_findings_are_still_shown(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("for x in:\n", encoding="utf-8")
    shutil.copy(CORPUS / "zero-grad-inside-accum" / "bad_nested_loop.py", tmp_path / "train.py")
    code, out = _lint(str(tmp_path))
    assert code == 2 and "parse-error" in out and "zero-grad-inside-accum" in out


def test_json_output_follows_the_lint_schema() -> None:
    path = CORPUS / "clip-before-unscale" / "bad_direct.py"
    code, out = _lint("--format", "json", str(path))
    data = json.loads(out)
    assert code == 1 and data["schema"] == "ddp-doctor.lint/1"
    [f] = data["findings"]
    assert set(f) >= {"id", "path", "line", "severity", "message", "fix"}
    assert (f["id"], f["line"], f["severity"]) == ("clip-before-unscale", 10, "error")
    assert f["fix"] == FINDINGS["clip-before-unscale"].fix.en


def test_sarif_output_is_sarif_2_1_0() -> None:
    code, out = _lint("--format", "sarif", str(CORPUS / "fsdp-clip-wrong" / "bad_fsdp1.py"))
    run = json.loads(out)["runs"][0]
    assert json.loads(out)["version"] == "2.1.0"
    assert [r["ruleId"] for r in run["results"]] == ["fsdp-clip-wrong"]
    assert run["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 9
    assert run["tool"]["driver"]["rules"][0]["id"] == "fsdp-clip-wrong"


def test_select_and_ignore_accept_comma_lists() -> None:
    path = str(CORPUS / "accum-loss-unscaled" / "bad_criterion_guarded.py")
    assert "accum-loss-unscaled" in _lint(path)[1]
    assert _lint("--ignore", "accum-loss-unscaled,find-unused-true", path)[0] == 0
    assert _lint("--select", "find-unused-true", "--select", "sampler-missing", path)[0] == 0


def test_lang_zh_prints_chinese_fix() -> None:
    out = _lint("--lang", "zh", str(CORPUS / "set-epoch-missing" / "bad_epoch_loop.py"))[1]
    assert FINDINGS["set-epoch-missing"].fix.zh in out and "警告" in out


# Rules with a mechanical autofix, and a bad snippet each: after --fix the finding is gone and
# the file still parses.
AUTOFIXED = [
    ("set-epoch-missing", "bad_epoch_loop.py", "sampler.set_epoch(epoch)"),
    ("set-epoch-missing", "bad_helper_epoch.py", "train_sampler.set_epoch(epoch)"),
    ("clip-before-unscale", "bad_direct.py", "scaler.unscale_(optimizer)"),
    ("clip-before-unscale", "bad_alias_import.py", "self.grad_scaler.unscale_(self.opt)"),
    ("find-unused-true", "bad_ddp_kwarg.py", "find_unused_parameters=False"),
    ("find-unused-true", "bad_fully_qualified.py", "find_unused_parameters=False"),
    ("fsdp-clip-wrong", "bad_fsdp1.py", "model.clip_grad_norm_(1.0)"),
    ("fsdp-clip-wrong", "bad_attribute_model.py", "self.model.clip_grad_norm_(max_norm)"),
    ("batchnorm-unsynced", "bad_conv_net.py", "model = nn.SyncBatchNorm.convert_sync_batchnorm(model)"),
    (
        "batchnorm-unsynced",
        "bad_torchvision.py",
        "model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)",
    ),
]


@pytest.mark.parametrize("rule, name, expected_text", AUTOFIXED, ids=[f"{r}/{n}" for r, n, _ in AUTOFIXED])
def test_fix_removes_the_finding_and_keeps_valid_python(
    tmp_path: Path, rule: str, name: str, expected_text: str
) -> None:
    target = tmp_path / name
    shutil.copy(CORPUS / rule / name, target)
    before = {f.id for f in lint_file(target).findings}
    code, out = _lint("--fix", str(target))
    text = target.read_text(encoding="utf-8")
    ast.parse(text)
    assert expected_text in text
    after = {f.id for f in lint_file(target).findings}
    assert rule in before and rule not in after
    assert after == before - {rule}
    assert "fixed" in out


def test_no_autofix_when_the_clip_sits_in_a_helper_without_the_scaler(tmp_path: Path) -> None:
    target = tmp_path / "helper.py"
    shutil.copy(CORPUS / "clip-before-unscale" / "bad_clip_in_helper.py", target)
    before = target.read_text(encoding="utf-8")
    [finding] = lint_file(target).findings
    assert finding.evidence["autofix"] is False
    _lint("--fix", str(target))
    assert target.read_text(encoding="utf-8") == before


def test_no_set_epoch_autofix_when_the_sampler_lives_in_another_function(tmp_path: Path) -> None:
    target = tmp_path / "split.py"
    target.write_text(
        "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
        "def build(ds):\n    sampler = DistributedSampler(ds)\n    loader = DataLoader(ds, sampler=sampler)\n"
        "    return loader\n\n\n"
        "def main(model, ds, opt):\n    loader = build(ds)\n    for epoch in range(3):\n"
        "        for batch in loader:\n            model(batch).loss.backward()\n            opt.step()\n",
        encoding="utf-8",
    )
    [finding] = lint_file(target).findings
    assert (finding.id, finding.evidence["autofix"]) == ("set-epoch-missing", False)


def test_fix_leaves_notebooks_untouched(tmp_path: Path) -> None:
    nb = tmp_path / "n.ipynb"
    src = [
        "from torch.nn.parallel import DistributedDataParallel as DDP\n",
        "m = DDP(n, find_unused_parameters=True)",
    ]
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "source": src}]}), encoding="utf-8")
    before = nb.read_text(encoding="utf-8")
    _lint("--fix", str(nb))
    assert nb.read_text(encoding="utf-8") == before
