"""Area `secrets`: a secret on the command line or in the environment never reaches a written file."""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from pathlib import Path

from .harness import Config, Outcome, Try

# --- secrets -----------------------------------------------------------------------------------------------------------


def secret_tries(cfg: Config) -> list[Try]:
    root = cfg.work / "secrets"
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(cfg.seed + 7)

    def s() -> str:
        return "S3CR3T" + "".join(rng.choice("abcdefghijkmnpqrstuvwxyz23456789") for _ in range(12))

    argv_forms = [
        lambda v: ["--api-key", v], lambda v: [f"--hf-token={v}"], lambda v: ["--password", v],
        lambda v: ["--token", v], lambda v: ["--secret", v], lambda v: [f"wandb.api_key={v}"],
        lambda v: [f"+db.password={v}"], lambda v: [f"https://user:{v}@example.com/repo"],
        lambda v: ["--auth", v], lambda v: ["--passphrase", v], lambda v: [f"--aws-secret-access-key={v}"],
        lambda v: [f"--apiKey={v}"], lambda v: ["--db-pass", v],
    ]  # fmt: skip
    env_names = ["NCCL_PWD", "TORCH_CREDS", "ACCELERATE_API_TOK", "HF_TOKEN", "WANDB_API_KEY", "NCCL_SECRET",
                 "TORCH_AUTH_HEADER", "MASTER_PASSWORD", "OMP_API_KEY"]  # fmt: skip
    tries = []
    for variant in range(1 if cfg.quick else 3):
        secrets: list[str] = []
        args: list[str] = []
        for form in argv_forms:
            v = s()
            secrets.append(v)
            args += form(v)
        tokens = ["hf_" + "A" * 34, "sk-" + "b" * 40, "ghp_" + "c" * 36, "AKIA" + "D" * 16]
        args += tokens
        secrets += tokens
        env = {}
        for n in env_names:
            env[n] = s()
            secrets.append(env[n])
        env["NCCL_SOCKET_IFNAME"] = "eth0"
        out = root / f"run-{variant}"
        if variant < 2:
            cmd = [sys.executable, "-c", "import sys; sys.exit(0)", *args]
        else:
            cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "ddp_doctor.trainer",
                   "--preset", "tiny", "--steps", "2", "--no-progress"]  # fmt: skip
            env.update({"WANDB_API_KEY": env["WANDB_API_KEY"]})
        t = Try("secrets", f"v{variant}: {len(secrets)} secrets in argv/env of `run`", ["run", "--out", str(out), "--", *cmd],
                root, env=env, secrets=tuple(secrets), scan=(out,), controls_ok=True, timeout=300, check=_perms(out))  # fmt: skip
        tries.append(t)
        for fmt in ("json",) if cfg.quick else ("json", "html", "text"):
            o = root / f"report-{variant}.{fmt}"
            codes = (
                frozenset({0}) if variant == 2 else frozenset({0, 2})
            )  # no torch, no rank file: "not a run"
            tries.append(Try("secrets", f"v{variant}: report [{fmt}] of that run", ["report", str(out), "--format", fmt, "--output", str(o)],
                             root, codes, secrets=tuple(secrets), scan=(o, out)))  # fmt: skip
    return tries


def _perms(out: Path) -> Callable[[Outcome], list[str]]:
    def check(o: Outcome) -> list[str]:
        bad = []
        for p in [out, *out.rglob("*")]:
            if p.is_symlink():
                continue
            mode = p.stat().st_mode & 0o777
            if mode & 0o077:
                bad.append(f"{p.relative_to(out.parent)} {mode:o}")
        return [f"run directory readable by others: {bad[:3]}"] if bad else []

    return check
