"""`ddp-doctor run` itself: usage errors, exit codes, crash safety, secrets, non-distributed runs."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

from probe.helpers import DDP_DOCTOR, SCRIPTS, base_env, kind, rank_files, read_rank, run_probe, torchrun

SECRET = "sekrit-3f9a1c"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*DDP_DOCTOR, *args], capture_output=True, text=True, timeout=60, env=base_env())


def test_run_without_a_command_is_a_usage_error():
    proc = _cli("run")
    assert proc.returncode == 2 and "no command given" in proc.stderr


def test_run_with_an_unknown_flag_is_a_usage_error():
    proc = _cli("run", "--bogus", "python", "x.py")
    assert proc.returncode == 2 and "--bogus" in proc.stderr


def test_run_with_a_bad_level_is_a_usage_error(tmp_path):
    proc = _cli("run", "--out", str(tmp_path / "r"), "--level", "max", "--", sys.executable, "-c", "pass")
    assert proc.returncode == 2 and "--level" in proc.stderr


def test_run_with_an_unknown_or_bad_intervention_is_a_usage_error(tmp_path):
    unknown = _cli(
        "run", "--out", str(tmp_path / "a"), "--set", "adam.epsilon=1e-8", "--", sys.executable, "-c", "pass"
    )
    assert unknown.returncode == 2 and "unknown intervention key 'adam.epsilon'" in unknown.stderr
    bad = _cli(
        "run", "--out", str(tmp_path / "b"), "--set", "lr.scale=-1", "--", sys.executable, "-c", "pass"
    )
    assert bad.returncode == 2 and "lr.scale" in bad.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()  # nothing started


def test_set_reaches_the_ranks_and_the_manifest(tmp_path):
    out = tmp_path / "run"
    script = (
        "import torch; m = torch.nn.Linear(2, 1); "
        "o = torch.optim.AdamW(m.parameters(), eps=1e-8); print('eps', o.param_groups[0]['eps'])"
    )
    proc = run_probe(out, [sys.executable, "-c", script], "--set", "adam.eps=1e-10")
    assert "eps 1e-10" in proc.stdout
    assert json.loads((out / "manifest.json").read_text())["interventions"] == {"adam.eps": "1e-10"}


def test_exit_code_passes_through_and_manifest_records_it(tmp_path):
    proc = run_probe(tmp_path / "run", [sys.executable, "-c", "import sys; sys.exit(7)"], check=False)
    assert proc.returncode == 7
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["exit_code"] == 7 and manifest["end"] and manifest["schema"] == "ddp-doctor.run/1"
    assert manifest["ranks"] == 0 and rank_files(tmp_path / "run") == []  # no torch, no rank file


def test_non_distributed_script_is_recorded_as_rank_0_and_secrets_never_reach_disk(tmp_path):
    out = tmp_path / "run"
    env = base_env(
        MY_SERVICE_TOKEN=SECRET,
        NCCL_AUTH_KEY=SECRET,
        TORCH_HUB_TOKEN=SECRET,
        HF_TOKEN=SECRET,
        NCCL_DEBUG="WARN",
    )
    run_probe(out, [sys.executable, str(SCRIPTS / "single_process.py")], env=env)
    files = [p for p in out.rglob("*") if p.is_file()]
    # the manifest, rank 0's records and rank 0's rollup index; no secret in any of them
    names = sorted(p.relative_to(out).as_posix() for p in files)
    assert names == ["manifest.json", "ranks/rank-00000.jsonl", "ranks/rollup-00000.jsonl"], names
    assert all(SECRET not in p.read_text() for p in files)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["env"]["NCCL_DEBUG"] == "WARN" and manifest["env"]["OMP_NUM_THREADS"] == "1"
    assert not {"MY_SERVICE_TOKEN", "NCCL_AUTH_KEY", "TORCH_HUB_TOKEN", "HF_TOKEN"} & set(manifest["env"])

    records = read_rank(out, 0)
    header = records[0]
    assert header["rank"] == 0 and header["world_size"] == 1 and header["backend"] is None
    steps = kind(records, "step")
    assert len(steps) == 3
    for step in steps:
        assert step["micro_steps"] == 1 and step["sync"] == [0] and step["grad_sq_local"] == [None]
        (loss_fn,) = step["loss_fn"]
        assert loss_fn["reduction"] == "mean" and loss_fn["n_valid"] == 3
        assert loss_fn["value"] == step["losses"][0]  # backward root is the loss function's output
        assert step["tokens"] == [3]
    (opt,) = kind(records, "config", "optimizer")
    assert opt["type"] == "Adam"
    (autocast,) = kind(records, "config", "autocast")
    assert autocast["dtype"] == "bfloat16" and autocast["device_type"] == "cpu"
    assert all(s["autocast"] == "bfloat16" for s in steps)
    (unused,) = kind(records, "unused")
    assert unused["names"] == ["group0.6", "group0.7"]  # no DDP model to name them: optimizer order
    # every=50: step 0, and the final state at exit
    assert [(r["step"], r.get("final", False)) for r in kind(records, "replica")] == [(0, False), (2, True)]
    assert records[-1]["kind"] == "end"


def test_crashing_script_keeps_its_records_and_exit_code(tmp_path):
    out = tmp_path / "run"
    proc = run_probe(out, [sys.executable, str(SCRIPTS / "crash.py")], check=False)
    assert proc.returncode == 1 and "boom at step 1" in proc.stderr
    records = read_rank(out, 0)
    assert [s["step"] for s in kind(records, "step")] == [0, 1]
    assert records[-1]["kind"] == "end"
    assert json.loads((out / "manifest.json").read_text())["exit_code"] == 1


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def test_sigkill_mid_run_leaves_every_complete_line_readable(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [*DDP_DOCTOR, "run", "--out", str(out), "--every", "1", "--", *torchrun("long_run.py")],
        env=base_env(),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            files = rank_files(out)
            if len(files) == 2 and all(f.read_bytes().count(b'"kind":"step"') >= 20 for f in files):
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the run never reached 20 steps")
    finally:
        # torchrun starts each worker in its own session: kill the ranks by the pids in their
        # headers, then the launcher and the torchrun agent (our session).
        for path in rank_files(out):
            first = path.read_text().split("\n", 1)[0]
            if first:
                _kill(json.loads(first)["pid"])
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    for path in rank_files(out):
        data = path.read_bytes()
        complete = data[: data.rfind(b"\n") + 1].decode().splitlines()
        records = [json.loads(line) for line in complete]  # every complete line parses
        assert records[0]["kind"] == "header"
        steps = kind(records, "step")
        assert len(steps) >= 20 and [s["step"] for s in steps] == list(range(len(steps)))
        assert not kind(records, "end")
    assert "end" not in json.loads((out / "manifest.json").read_text())


def test_explicit_attach_without_the_launcher_writes_rank_file_and_manifest(tmp_path):
    out = tmp_path / "run"
    env = {k: v for k, v in base_env().items() if not k.startswith("DDP_DOCTOR_")}
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "attach_explicit.py"), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    records = read_rank(out, 0)
    assert [s["step"] for s in kind(records, "step")] == [0, 1]
    assert [r["step"] for r in kind(records, "replica")] == [0, 1]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["attached"] is True and manifest["every"] == 1 and "env" not in manifest


def test_a_sitecustomize_already_on_the_path_still_runs(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nopen(os.environ['MARK'], 'w').write('ran')\n")
    env = base_env(PYTHONPATH=str(site), MARK=str(tmp_path / "mark"))
    run_probe(tmp_path / "run", [sys.executable, "-c", "import sitecustomize"], env=env)
    assert (tmp_path / "mark").read_text() == "ran"


def test_secret_flags_and_env_are_redacted_in_manifest_and_json_report_and_files_are_private(tmp_path):
    out = tmp_path / "run"
    script = (
        "import torch; m = torch.nn.Linear(2, 1); o = torch.optim.SGD(m.parameters(), lr=0.1); "
        "m(torch.ones(1, 2)).sum().backward(); o.step()"
    )
    argv = [sys.executable, "-c", script, "--api-key", SECRET, f"--hf-token={SECRET}", "--password", SECRET]
    env = base_env(NCCL_PWD=SECRET, TORCH_CREDS=SECRET, ACCELERATE_API_TOK=SECRET)
    run_probe(out, argv, env=env)
    manifest = (out / "manifest.json").read_text()
    assert SECRET not in manifest and "--api-key" in manifest
    assert not {"NCCL_PWD", "TORCH_CREDS", "ACCELERATE_API_TOK"} & set(json.loads(manifest)["env"])
    report = _cli("report", str(out), "--format", "json")
    assert report.returncode == 0 and SECRET not in report.stdout
    assert json.loads(report.stdout)["run"]["command"][3:5] == ["--api-key", "<redacted>"]
    for path in [out, *out.rglob("*")]:
        mode = path.stat().st_mode & 0o777
        if path.is_dir():
            assert mode == 0o700, path
        elif not path.name.endswith(".cache") and "cache" not in path.parts:  # the reader's cache: its own
            assert mode == 0o600, path
