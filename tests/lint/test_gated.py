"""Config-gated findings: the bug exists when a flag has a given value; reported one severity level
below the catalog's, with the flag value, in text, JSON and SARIF."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from ddp_doctor.cli import app
from ddp_doctor.lint.engine import lint_source

PTDTYPE = textwrap.dedent("""\
    import argparse
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", default="bfloat16")
    args = parser.parse_args()
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[args.dtype]
    ctx = torch.amp.autocast(device_type="cuda", dtype=ptdtype)

    def train(model, x, y, optimizer):
        with ctx:
            loss = model(x, y)
        loss.backward()
        optimizer.step()
""")


def _one(source: str, rule: str):
    found = [f for f in lint_source(source, "train.py").findings if f.id == rule]
    assert len(found) == 1, found
    return found[0]


def test_autocast_dtype_chosen_from_a_flag_is_gated_on_the_float16_value() -> None:
    f = _one(PTDTYPE, "fp16-no-scaler")
    assert f.evidence["gated_by"] == "--dtype == 'float16'"
    assert f.severity == "warning"  # catalog: error; gated: one level lower


def test_flag_chosen_dtype_with_a_scaler_is_not_flagged() -> None:
    source = PTDTYPE + "scaler = torch.amp.GradScaler(enabled=(args.dtype == 'float16'))\n"
    assert not [f for f in lint_source(source, "train.py").findings if f.id == "fp16-no-scaler"]


def test_ifexp_dtype_and_fsdp_mixed_precision_fp16() -> None:
    source = textwrap.dedent("""\
        import torch
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision

        def build(model, cfg):
            policy = MixedPrecision(param_dtype=torch.float16, reduce_dtype=torch.float16)
            return FSDP(model, mixed_precision=policy)

        def step(model, x, cfg):
            with torch.autocast("cuda", dtype=torch.float16 if cfg.fp16 else torch.bfloat16):
                loss = model(x)
            loss.backward()
    """)
    found = {(f.id, f.line, f.evidence.get("gated_by")) for f in lint_source(source, "t.py").findings}
    assert ("fp16-no-scaler", 5, None) in found
    assert ("fp16-no-scaler", 9, "fp16 true") in found


def test_compile_behind_a_module_level_config_flag_is_gated() -> None:
    source = textwrap.dedent("""\
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        compile = True
        ddp = True
        model = torch.nn.Linear(2, 2)
        if compile:
            model = torch.compile(model)
        if ddp:
            model = DDP(model)
    """)
    f = _one(source, "compile-before-ddp")
    assert f.evidence["gated_by"] == "compile on (the default)"


COMPILE_SWITCH = textwrap.dedent("""\
    import argparse
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    parser = argparse.ArgumentParser()
    parser.add_argument("--compile", default=False, action="store_true")
    args = parser.parse_args()
    model = torch.nn.Linear(2, 2)
    if {test}:
        model = torch.compile(model)
    model = DDP(model)
""")


def test_gate_reads_identity_and_negated_switches() -> None:
    """birder spells switches ``args.compile is True``; a negated test names the value that runs
    the branch (``not args.compile``: the compile runs with --compile off, the default)."""
    expected = {
        "args.compile": "--compile on",
        "args.compile is True": "--compile on",
        "args.compile is not False": "--compile on",
        "args.compile is False": "--compile off (the default)",
        "args.compile is not True": "--compile off (the default)",
        "not args.compile": "--compile off (the default)",
        "not args.compile is True": "--compile off (the default)",
    }
    for test, gate in expected.items():
        f = _one(COMPILE_SWITCH.format(test=test), "compile-before-ddp")
        assert f.evidence["gated_by"] == gate, test


def test_gate_appears_in_text_json_and_sarif(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(PTDTYPE, encoding="utf-8")
    runner = CliRunner()
    text = runner.invoke(app, ["lint", str(path)]).output
    assert "(config-gated: --dtype == 'float16')" in text
    data = json.loads(runner.invoke(app, ["lint", str(path), "--format", "json"]).output)
    finding = next(f for f in data["findings"] if f["id"] == "fp16-no-scaler")
    assert finding["gated_by"] == "--dtype == 'float16'" and finding["tags"] == ["config-gated"]
    sarif = json.loads(runner.invoke(app, ["lint", str(path), "--format", "sarif"]).output)
    result = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "fp16-no-scaler")
    assert result["properties"]["gated_by"] == "--dtype == 'float16'"
    assert result["level"] == "warning"
