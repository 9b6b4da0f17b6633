"""Secret-looking names and values (ddp_doctor.core.redact; patterns in docs/run-format.md, "Secrets")."""

from __future__ import annotations

import pytest

from ddp_doctor.core.redact import (
    REDACTED,
    is_secret_name,
    known_secrets,
    redact_argv,
    redact_env,
    redact_text,
    redact_value,
)
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


# Real-world credential shapes (fake values in each vendor's documented format): the argument as
# it appears on a command line, and the part that must not survive.
CREDENTIALS = [
    (
        "s3-presigned",
        "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=9f86d081884c7d65",
        "9f86d081884c7d65",
    ),
    (
        "s3-credential",
        "https://b.s3.amazonaws.com/k?X-Amz-Credential=ASIAXYZXYZXYZXYZXYZ1%2F2025&x=1",
        "ASIAXYZXYZXYZXYZXYZ1",
    ),
    (
        "s3-session",
        "https://b.s3.amazonaws.com/k?X-Amz-Security-Token=FwoGZXIvYXdzEBYa&X-Amz-Expires=60",
        "FwoGZXIvYXdzEBYa",
    ),
    (
        "gcs-signed",
        "https://storage.googleapis.com/b/o?X-Goog-Signature=1a2b3c4d5e6f7a8b",
        "1a2b3c4d5e6f7a8b",
    ),
    (
        "oauth-access-token",
        "https://api.example.com/v1/data?access_token=ya29.a0AfH6SMBx&page=2",
        "ya29.a0AfH6SMBx",
    ),
    ("query-token", "https://hub.example.com/file?token=zq81Mx02Lk", "zq81Mx02Lk"),
    ("query-api-key", "https://maps.example.com/api?api_key=4f3c2b1a0d9e&q=x", "4f3c2b1a0d9e"),
    (
        "azure-sas",
        "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=AbC%2Bde1234567890%3D",
        "AbC%2Bde1234567890",
    ),
    (
        "azure-conn",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4MTIz==;",
        "Zm9vYmFyYmF6cXV4MTIz",
    ),
    ("url-password", "postgres://trainer:Pa55w0rd!x@db.internal:5432/runs", "Pa55w0rd!x"),
    ("header-eq-bearer", "--header=Authorization: Bearer eyJhbGciOiJIUzI1NiJ9", "eyJhbGciOiJIUzI1NiJ9"),
    ("header-basic", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"),
    ("json-api-key", '{"api_key": "ak-7Hq2LmN9pX", "lr": 0.1}', "ak-7Hq2LmN9pX"),
    ("json-password", "{'password': 'hunter2hunter2'}", "hunter2hunter2"),
    ("hf", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    ("openai", "sk-proj-Zx9Yw8Xv7Wu6Vt5Us4Tr3Sq2Rp1", "sk-proj-Zx9Yw8Xv7Wu6Vt5Us4Tr3Sq2Rp1"),
    ("github", "ghp_16C7e42F292c6912E7710c838347Ae178B4a", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("gitlab", "glpat-xQ7zR2mN9pL4kJ8hG3fD", "glpat-xQ7zR2mN9pL4kJ8hG3fD"),
    ("slack", "xoxb-123456789012-1234567890123-AbCdEfGhIjKl", "xoxb-123456789012"),
    ("aws-key-id", "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("stripe", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("sendgrid", "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", "TwL2iGABf9DHoTf"),
    ("npm", "npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("google-api", "AIzaSyA1B2C3D4E5F6G7H8I9J0KLMNOPQRSTUVW", "AIzaSyA1B2C3D4E5F6G7H8I9J0KLMNOPQRSTUVW"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
        "dozjgNryP4J3jVmNHl0w5N",
    ),
    (
        "private-key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA",
    ),
    (
        "wandb-key-in-text",
        "wandb login failed for key 0123456789abcdef0123456789abcdef01234567",
        "0123456789abcdef0123",
    ),
]


@pytest.mark.parametrize(("shape", "arg", "secret"), CREDENTIALS, ids=[c[0] for c in CREDENTIALS])
def test_real_world_credential_shapes_are_redacted_in_commands_and_text(shape, arg, secret):
    assert secret not in " ".join(redact_argv(["train.py", "--data", arg])), shape
    assert secret not in redact_text(f"RuntimeError: could not open {arg}"), shape


def test_short_flags_and_user_password_pairs():
    out = redact_argv(
        ["mysql", "-p", "hunter2pw", "-P", "3306", "ssh", "-p", "22", "curl", "-u", "bob:pw123456"]
    )
    assert out == ["mysql", "-p", REDACTED, "-P", "3306", "ssh", "-p", "22", "curl", "-u", f"bob:{REDACTED}"]


ORDINARY = [
    "optimizer.lr=3e-4",
    "--output_dir=/tmp/runs/a",
    "https://github.com/pytorch/pytorch/blob/main/README.md?plain=1",
    "--revision",
    "0123456789abcdef0123456789abcdef01234567",  # a git commit: no key in sight
    "model.max_tokens=2048",
    "--grad-clip=1.0",
    "data/train-00001-of-00004.parquet",
]


def test_ordinary_arguments_and_text_are_kept():
    assert redact_argv(ORDINARY) == ORDINARY
    text = (
        "ValueError: expected 2 ranks, got 3 at step 5 (max tokens: 2048); see https://pytorch.org/docs?x=1"
    )
    assert redact_text(text) == text


def test_the_commands_own_secrets_are_redacted_wherever_free_text_quotes_them():
    argv = ["train.py", "--api-key", "K3yK3yK3y", "--db", "postgres://u:pgsecret99@h/db", "-p", "pw-77-xyz"]
    env = {"WANDB_API_KEY": "f" * 40, "HF_TOKEN": "hf_" + "z" * 30, "PATH": "/usr/bin"}
    known = known_secrets(argv, env)
    assert known == {"K3yK3yK3y", "pw-77-xyz", "f" * 40, "hf_" + "z" * 30}
    message = "RuntimeError: auth with K3yK3yK3y failed; retry pw-77-xyz; key=" + "f" * 40
    assert (
        redact_text(message, known)
        == f"RuntimeError: auth with {REDACTED} failed; retry {REDACTED}; key={REDACTED}"
    )
