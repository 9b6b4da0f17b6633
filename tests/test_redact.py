"""Secret-looking names and values (ddp_doctor.core.redact; patterns in docs/run-format.md, "Secrets")."""

from __future__ import annotations

import pytest

from ddp_doctor.core.redact import REDACTED, is_secret_name, redact_argv, redact_env, redact_value
from ddp_doctor.launch.launcher import allowed_env

S = "sekrit-3f9a1c"


@pytest.mark.parametrize(
    "name",
    [
        "NCCL_PWD",
        "TORCH_CREDS",
        "ACCELERATE_API_TOK",
        "HF_TOKEN",
        "WANDB_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "NCCL_IB_AUTH_KEY",
        "DB_PASSWORD",
        "api-key",
        "hf-token",
        "password",
        "token",
        "secret",
        "apiKey",
        "authToken",
        "wandb.api_key",
        "MYAPIKEY",
        "passphrase",
        "TORCH_PASS",
    ],
)
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "WORLD_SIZE",
        "MASTER_PORT",
        "NCCL_DEBUG",
        "NCCL_SOCKET_IFNAME",
        "TORCH_DISTRIBUTED_DEBUG",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING",
        "TORCHELASTIC_RUN_ID",
        "ACCELERATE_MIXED_PRECISION",
        "CUDA_VISIBLE_DEVICES",
        "OMP_NUM_THREADS",
        "lr",
        "batch-size",
        "nproc_per_node",
    ],
)
def test_ordinary_names(name):
    assert not is_secret_name(name)


def test_values_after_secret_flags_are_redacted():
    argv = ["torchrun", "--nproc_per_node", "4", "train.py", "--api-key", S, f"--hf-token={S}"]
    argv += ["--password", S, "--token", S, "--secret", S, "--lr", "3e-4", "--auth_token", S, "--apiKey", S]
    out = redact_argv(argv)
    assert S not in " ".join(out)
    assert out[:4] == ["torchrun", "--nproc_per_node", "4", "train.py"]
    assert out[4:7] == ["--api-key", REDACTED, f"--hf-token={REDACTED}"]
    assert "3e-4" in out  # ordinary values stay


def test_overrides_urls_and_token_shapes():
    out = redact_argv(
        [
            f"wandb.api_key={S}",
            f"+db.password={S}",
            f"https://bob:{S}@example.com/data",
            "hf_" + "a" * 30,
            "--note",
            "sk-" + "B" * 40,
            "optimizer.lr=0.1",
            "https://example.com/x",
        ]
    )
    assert out[:2] == [f"wandb.api_key={REDACTED}", f"+db.password={REDACTED}"]
    assert out[2] == f"https://bob:{REDACTED}@example.com/data"
    assert out[3] == REDACTED and out[5] == REDACTED
    assert out[6:] == ["optimizer.lr=0.1", "https://example.com/x"]


def test_a_secret_flag_followed_by_another_flag_hides_nothing_else():
    assert redact_argv(["--use-auth-token", "--lr", "1", "--lr", "-1", 3]) == [
        "--use-auth-token",
        "--lr",
        "1",
        "--lr",
        "-1",
        3,
    ]


def test_env_names_from_the_issue_are_not_recorded():
    env = {"NCCL_PWD": S, "TORCH_CREDS": S, "ACCELERATE_API_TOK": S, "NCCL_DEBUG": "INFO", "WORLD_SIZE": "2"}
    assert allowed_env(env) == {"NCCL_DEBUG": "INFO", "WORLD_SIZE": "2"}
    assert redact_env({"X_URL": f"https://u:{S}@h", "TORCH_HOME": "/t"}) == {
        "X_URL": f"https://u:{REDACTED}@h",
        "TORCH_HOME": "/t",
    }
    assert redact_value("plain") == "plain"
