"""Area `plan`: hostile model configs and flags given to `plan`."""

from __future__ import annotations

import json
import os

from .harness import Config, Outcome, Try, deep, pick

# --- plan ------------------------------------------------------------------------------------------------------------


def plan_tries(cfg: Config) -> list[Try]:
    root = cfg.work / "plan"
    root.mkdir(parents=True, exist_ok=True)
    good = {"hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8, "intermediate_size": 1376,
            "vocab_size": 32000, "num_key_value_heads": 8}  # fmt: skip
    configs: dict[str, str | None] = {
        "zero-heads": json.dumps(dict(good, num_attention_heads=0)),
        "zero-kv-heads": json.dumps(dict(good, num_key_value_heads=0)),
        "heads-above-hidden": json.dumps(dict(good, num_attention_heads=1024)),
        "hidden-1e300": json.dumps(dict(good, hidden_size=1e300)),
        "layers-2^62": json.dumps(dict(good, num_hidden_layers=2**62)),
        "vocab-5000-digits": json.dumps(good).replace("32000", "9" * 5000),
        "negative": json.dumps(dict(good, hidden_size=-512)),
        "fractional": json.dumps(dict(good, hidden_size=511.5)),
        "strings": json.dumps(dict(good, hidden_size="512")),
        "bools": json.dumps(dict(good, num_hidden_layers=True)),
        "nulls": json.dumps(dict(good, intermediate_size=None)),
        "nan": json.dumps(good).replace("1376", "NaN"),
        "infinity": json.dumps(good).replace("1376", "Infinity"),
        "missing-fields": json.dumps({"hidden_size": 512}),
        "top-level-list": "[1, 2]",
        "deep": deep(100_000),
        "deep-object": '{"a":' * 100_000 + "1" + "}" * 100_000,
        "empty": "",
        "binary": "\x00\x01\x02\xff",
        "huge-20MB": json.dumps(dict(good, pad="x" * 20 * 2**20)),
        "fifo": None,
    }
    configs = dict(pick(list(configs.items()), cfg.quick, 5))
    tries = []
    for name, text in configs.items():
        p = root / f"{name}.json"
        if text is None:
            os.mkfifo(p)
        else:
            p.write_bytes(text.encode("utf-8", "surrogatepass"))
        tries.append(
            Try(
                "plan",
                f"--model {name}.json",
                ["plan", "--model", str(p), "--gpus", "8", "--gpu", "a100-80gb"],
                root,
            )
        )
    tries.append(
        Try(
            "plan", "--model a directory", ["plan", "--model", str(root), "--gpus", "1"], root, frozenset({2})
        )
    )
    tries.append(
        Try(
            "plan",
            "--model missing file",
            ["plan", "--model", str(root / "nope.json"), "--gpus", "1"],
            root,
            frozenset({2}),
        )
    )
    tries.append(
        Try(
            "plan", "--model /dev/zero", ["plan", "--model", "/dev/zero", "--gpus", "1"], root, frozenset({2})
        )
    )
    flags = {
        "--gpu-mem inf": ["--gpu-mem", "inf"],
        "--gpu-mem nan": ["--gpu-mem", "nan"],
        "--gpu-mem 1e308": ["--gpu-mem", "1e308"],
        "--gpu-mem -1": ["--gpu-mem", "-1"],
        "--gpu-mem 1e-300": ["--gpu-mem", "1e-300"],
        "--gpu-mem abc": ["--gpu-mem", "abc"],
        "--seq-len 2^62": ["--seq-len", str(2**62)],
        "--seq-len 10^30": ["--seq-len", str(10**30)],
        "--micro-batch 2^62": ["--micro-batch", str(2**62)],
        "--global-batch 2^62": ["--global-batch", str(2**62)],
        "--accum 2^62": ["--accum", str(2**62)],
        "--gpus 2^40": ["--gpus", str(2**40)],
        "--nodes 2^40": ["--nodes", str(2**40)],
        "--lora-rank 2^40": ["--lora-rank", str(2**40)],
        "--mfu nan": ["--mfu", "nan"],
        "--node-network-gbps inf": ["--node-network-gbps", "inf"],
        "--node-network-gbps nan": ["--node-network-gbps", "nan"],
        "--gpu unknown": ["--gpu", "zz-9000"],
        "--model unknown preset": ["--model", "llama-9000"],
    }
    flags = dict(pick(list(flags.items()), cfg.quick, 5))
    for name, extra in flags.items():
        argv = ["plan", "--model", "llama-7b", "--gpus", "8", "--gpu", "a100-80gb", *extra]
        if "--model" in extra:
            argv = ["plan", "--gpus", "8", *extra]
        for fmt in ("text", "json") if not cfg.quick else ("json",):
            tries.append(
                Try(
                    "plan",
                    f"{name} [{fmt}]",
                    [*argv, "--format", fmt],
                    root,
                    check=_plan_json if fmt == "json" else None,
                )
            )
    return tries


def _plan_json(o: Outcome) -> list[str]:
    if o.code == 0:
        json.loads(o.stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"bare {c} in JSON")))
    return []
