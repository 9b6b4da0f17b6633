"""Area `lint`: hostile sources, notebooks and configs given to `lint` (and `--fix`)."""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

from .harness import Config, Outcome, Try, deep, pick

# --- lint ---------------------------------------------------------------------------------------------------------

DDP_SCRIPT = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def main():
    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    model = DDP(torch.nn.Linear(10, 10).cuda(rank), device_ids=[rank])
    data = torch.utils.data.TensorDataset(torch.randn(100, 10))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 100)
    for epoch in range(3):
        for i, (x,) in enumerate(loader):
            loss = model(x.cuda(rank)).pow(2).mean() / 4
            loss.backward()
            sched.step()
            if (i + 1) % 4 == 0:
                opt.step()
                opt.zero_grad()
            if rank == 0:
                print(f"epoch {epoch} step {i} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def _notebook(cells: object, **extra: object) -> str:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5, **extra})


def lint_tries(cfg: Config) -> list[Try]:
    root = cfg.work / "lint"
    root.mkdir(parents=True, exist_ok=True)
    repo = Path(__file__).resolve().parents[2]
    real = [repo / "examples" / "ddp_done_right.py", repo / "src/ddp_doctor/trainer/loop.py"]
    sources: dict[str, bytes] = {"ddp_script.py": DDP_SCRIPT.encode()}
    sources.update({p.name: p.read_bytes() for p in real if p.is_file()})
    files: dict[str, bytes | str] = {
        "empty.py": b"",
        "bom-only.py": b"\xef\xbb\xbf",
        "utf8-bom.py": b"\xef\xbb\xbf" + DDP_SCRIPT.encode(),
        "latin1-declared.py": b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + DDP_SCRIPT.encode(),
        "cp1252-declared.py": b"# vim: set fileencoding=cp1252 :\nx = '\x93quoted\x94'\n",
        "unknown-coding.py": b"# coding: no-such-codec\nx = 1\n",
        "utf16-bom.py": "import torch\nx = 1\n".encode("utf-16"),
        "undeclared-latin1.py": b"x = 'caf\xe9'\n",
        "nul-bytes.py": b"import torch\x00\x00\nx = 1\n",
        "elf-binary.py": b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 40,
        "tab-error.py": b"if True:\n\tx = 1\n        y = 2\n",
        "syntax-error.py": b"def f(:\n    pass\n",
        "cr-only-endings.py": DDP_SCRIPT.replace("\n", "\r").encode(),
        "mixed-endings.py": DDP_SCRIPT.replace("\n", "\r\n", 5).encode(),
        "form-feed.py": b"import torch\n\x0c\nx = 1\n",
        "deep-parens-200.py": ("x = " + "(" * 200 + "1" + ")" * 200 + "\n").encode(),
        "deep-lists-5000.py": ("x = " + deep(5000) + "\n").encode(),
        "unary-chain-100k.py": ("x = " + "-" * 100_000 + "1\n").encode(),
        "binop-chain-100k.py": ("x = " + "+".join(["a"] * 100_000) + "\n").encode(),
        "attr-chain-50k.py": ("x = a" + ".b" * 50_000 + "\n").encode(),
        "call-chain-20k.py": ("x = f" + "()" * 20_000 + "\n").encode(),
        "if-nesting-99.py": "".join(" " * i + "if x:\n" for i in range(99)).encode() + b" " * 99 + b"pass\n",
        "if-nesting-150.py": "".join(" " * i + "if x:\n" for i in range(150)).encode()
        + b" " * 150
        + b"pass\n",
        "long-line-4MB.py": b"x = '" + b"a" * 4 * 2**20 + b"'\n",
        "many-defs.py": "".join(f"def f{i}(model):\n    model.backward()\n" for i in range(20000)).encode(),
        "nb-source-int.ipynb": _notebook([{"cell_type": "code", "source": 5, "metadata": {}}]),
        "nb-source-list-of-ints.ipynb": _notebook([{"cell_type": "code", "source": [1, 2], "metadata": {}}]),
        "nb-source-null.ipynb": _notebook([{"cell_type": "code", "source": None}]),
        "nb-cells-dict.ipynb": _notebook({"a": 1}),
        "nb-cells-missing.ipynb": json.dumps({"nbformat": 4}),
        "nb-cell-is-string.ipynb": _notebook(["import torch"]),
        "nb-cell-type-list.ipynb": _notebook([{"cell_type": ["code"], "source": "x=1"}]),
        "nb-deep.ipynb": _notebook(
            [{"cell_type": "code", "source": "x = 1", "metadata": json.loads(deep(500))}]
        ).replace("[]", deep(100_000)),
        "nb-top-level-list.ipynb": "[1, 2, 3]",
        "nb-not-json.ipynb": "{ this is not json",
        "nb-empty.ipynb": "",
        "nb-binary.ipynb": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8,
        "nb-huge-cells.ipynb": _notebook([{"cell_type": "code", "source": DDP_SCRIPT} for _ in range(2000)]),
        "nb-ddp.ipynb": _notebook([{"cell_type": "code", "source": DDP_SCRIPT.splitlines(True)}]),
        "nb-magics.ipynb": _notebook(
            [{"cell_type": "code", "source": "%matplotlib inline\n!pip install x\nx = 1\n"}]
        ),
    }
    files = dict(pick(list(files.items()), cfg.quick, 6))
    rng = random.Random(cfg.seed + 1)
    for i in range(3 if cfg.quick else 60):  # random damage of real-style scripts
        name, src = rng.choice(sorted(sources.items()))
        data = bytearray(src)
        for _ in range(rng.randint(1, 6)):
            op, at = rng.randrange(4), rng.randrange(len(data) or 1)
            if op == 0:
                data[at] ^= 1 << rng.randrange(8)
            elif op == 1:
                del data[at : at + rng.randint(1, 200)]
            elif op == 2:
                data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
            else:
                piece = data[rng.randrange(len(data)) :][: rng.randint(1, 400)]
                data[at:at] = piece
        files[f"random-{i:02d}-{Path(name).stem}.py"] = bytes(data)
    tries: list[Try] = []
    each = root / "files"
    each.mkdir()
    for name, content in files.items():
        p = each / name
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        for fmt in (
            ("text", "json", "sarif") if name.startswith(("nb-ddp", "latin1", "random-00")) else ("json",)
        ):
            tries.append(
                Try(
                    "lint",
                    f"{name} [{fmt}]",
                    ["lint", str(p), "--format", fmt],
                    root,
                    check=_lint_check(name, fmt),
                    timeout=120 if name.startswith(("nb-huge", "many-defs")) else None,
                )
            )
    # whole directories: every file at once, FIFOs, loops, unreadable files, hostile config
    tree = root / "tree"
    shutil.copytree(each, tree)
    os.mkfifo(tree / "fifo.py")
    os.mkfifo(tree / "fifo.ipynb")
    (tree / "loop").symlink_to(".")
    (tree / "up").symlink_to("..")
    (tree / "dangling.py").symlink_to("does-not-exist.py")
    (tree / "dir.py").mkdir()
    (tree / "self.py").symlink_to("self.py")
    tries.append(
        Try(
            "lint",
            "directory with FIFOs, symlink loops, dir.py, every damaged file",
            ["lint", str(tree)],
            root,
            timeout=180,
        )
    )
    tries.append(
        Try(
            "lint",
            "same directory --no-project",
            ["lint", str(tree), "--no-project", "--format", "json"],
            root,
            timeout=180,
        )
    )
    tries.append(
        Try("lint", "FIFO named on the command line", ["lint", str(tree / "fifo.py")], root, frozenset({2}))
    )
    tries.append(
        Try(
            "lint",
            "symlink loop named on the command line",
            ["lint", str(tree / "self.py")],
            root,
            frozenset({2}),
        )
    )
    tries.append(
        Try("lint", "/dev/zero named on the command line", ["lint", "/dev/zero"], root, frozenset({2}))
    )
    tries.append(Try("lint", "a directory named x.py", ["lint", str(tree / "dir.py")], root, frozenset({0})))
    for cname, toml in {
        "toml-invalid": "[tool.ddp-doctor\nselect = ",
        "toml-select-int": "[tool.ddp-doctor]\nselect = 5\n",
        "toml-unknown-id": '[tool.ddp-doctor]\nselect = ["NOPE-123"]\n',
        "toml-ignore-table": "[tool.ddp-doctor]\nignore = {a = 1}\n",
        "toml-deep": "[tool.ddp-doctor]\nx = " + deep(5000) + "\n",
        "toml-binary": "\x00\xff\xfe",
        "toml-tool-not-a-table": "tool = 5\n",
        "toml-section-a-string": '[tool]\n"ddp-doctor" = "x"\n',
        "toml-fifo": None,
    }.items():
        proj = root / cname
        proj.mkdir()
        (proj / "train.py").write_text(DDP_SCRIPT)
        if toml is None:
            os.mkfifo(proj / "pyproject.toml")
        else:
            (proj / "pyproject.toml").write_bytes(toml.encode("latin-1"))
        tries.append(Try("lint", f"project with {cname}", ["lint", str(proj)], root))
    # --fix: keeps line endings and encoding, refuses read-only files clearly, never follows a symlink
    fixable = "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nm = DDP(torch.nn.Linear(1, 1), find_unused_parameters=True)\n"
    for fname, data in {
        "fix-crlf.py": (DDP_SCRIPT + fixable).replace("\n", "\r\n").encode(),
        "fix-latin1.py": b"# coding: latin-1\n# caf\xe9\n" + (DDP_SCRIPT + fixable).encode(),
    }.items():
        p = root / fname
        p.write_bytes(data)
        tries.append(Try("lint", f"--fix {fname} keeps bytes it does not fix", ["lint", "--fix", str(p)], root,
                         check=_fix_keeps(p, data)))  # fmt: skip
    ro = root / "ro"
    ro.mkdir()
    (ro / "fix-readonly.py").write_text(DDP_SCRIPT)
    (ro / "fix-readonly.py").chmod(0o444)
    ro.chmod(0o555)
    (root).chmod(0o755)
    cfg.work.chmod(0o755)
    tries.append(Try("lint", "--fix on a read-only file in a read-only dir (as nobody)", ["lint", "--fix", str(ro / "fix-readonly.py")],
                     root, frozenset({2}), as_nobody=True))  # fmt: skip
    if cfg.quick:
        extra = ("directory with FIFOs", "FIFO named", "project with toml-deep", "project with toml-fifo")
        tries = [t for t in tries if t.name.endswith("]") or t.name.startswith(extra) or "--fix" in t.name]
    return tries


def _lint_check(name: str, fmt: str) -> Callable[[Outcome], list[str]]:
    def check(o: Outcome) -> list[str]:
        fails = []
        if fmt in ("json", "sarif") and o.code in (0, 1, 2) and o.stdout.strip():
            try:
                json.loads(o.stdout)
            except ValueError:
                fails.append(f"--format {fmt} stdout is not JSON")
        if name.startswith(("latin1-declared", "cp1252-declared", "utf8-bom")) and o.code == 2:
            fails.append("silently wrong: a file in its declared encoding was refused")
        return fails

    return check


def _fix_keeps(p: Path, before: bytes) -> Callable[[Outcome], list[str]]:
    def check(o: Outcome) -> list[str]:
        after = p.read_bytes()
        fails = []
        if b"\r\n" in before and after.replace(b"\r\n", b"").count(b"\n"):
            fails.append("--fix turned CRLF line endings into LF")
        if b"caf\xe9" in before and b"caf\xe9" not in after:
            fails.append("--fix changed the file's declared encoding")
        return fails

    return check
