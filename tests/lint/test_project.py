"""Project mode: facts that live in another file of the directory (lint/project.py).

Each case is a small multi-file project; linting the directory must find what linting the file
alone cannot prove (and file mode must stay silent: precision).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from ddp_doctor.lint.engine import lint_paths


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def _found(root: Path, project: bool = True) -> set[tuple[str, str, str | None]]:
    result = lint_paths([root], project=project)
    assert not result.diagnostics
    return {
        (f.id, Path(f.path or "").relative_to(root).as_posix(), f.evidence.get("gated_by"))
        for f in result.findings
    }


YOLO_LIKE = {
    "utils/torch_utils.py": """
        from torch.nn.parallel import DistributedDataParallel as DDP

        def smart_DDP(model):
            return DDP(model, device_ids=[0])
    """,
    "models/common.py": """
        import torch.nn as nn

        class Conv(nn.Module):
            def __init__(self, c1, c2):
                super().__init__()
                self.conv = nn.Conv2d(c1, c2, 3)
                self.bn = nn.BatchNorm2d(c2)
    """,
    "models/yolo.py": """
        import torch.nn as nn
        from models.common import Conv

        class DetectionModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = Conv(3, 16)

        Model = DetectionModel
    """,
    "train.py": """
        import argparse
        import torch
        from models.yolo import Model
        from utils.torch_utils import smart_DDP

        def train(opt):
            model = Model()
            if opt.sync_bn:
                model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
            model = smart_DDP(model)

        parser = argparse.ArgumentParser()
        parser.add_argument("--sync-bn", action="store_true")
    """,
}


def test_batchnorm_in_another_module_wrapped_by_a_project_helper_is_config_gated(tmp_path: Path) -> None:
    root = _write(tmp_path, YOLO_LIKE)
    assert ("batchnorm-unsynced", "train.py", "--sync-bn off (the default)") in _found(root)
    assert not any(f[0] == "batchnorm-unsynced" for f in _found(root, project=False))


def test_sync_batchnorm_on_by_default_is_not_flagged(tmp_path: Path) -> None:
    files = dict(YOLO_LIKE)
    files["train.py"] = files["train.py"].replace(
        'add_argument("--sync-bn", action="store_true")', 'add_argument("--sync-bn", default=True)'
    )
    root = _write(tmp_path, files)
    assert not any(f[0] == "batchnorm-unsynced" for f in _found(root))


MAE_LIKE = {
    "util/misc.py": """
        import torch

        class NativeScaler:
            def __init__(self):
                self._scaler = torch.cuda.amp.GradScaler()

            def __call__(self, loss, optimizer, update_grad=True):
                self._scaler.scale(loss).backward()
                if update_grad:
                    self._scaler.step(optimizer)
                    self._scaler.update()
    """,
    "main.py": """
        import torch
        from util.misc import NativeScaler
        from engine import train_one_epoch

        def main(model, loader, optimizer, args, global_rank):
            model = torch.nn.parallel.DistributedDataParallel(model)
            loss_scaler = NativeScaler()
            log_writer = Writer(args.log_dir) if global_rank == 0 else None
            train_one_epoch(model, loader, optimizer, loss_scaler, args.accum_iter, log_writer)
    """,
    "engine.py": """
        import torch

        def train_one_epoch(model, loader, optimizer, loss_scaler, accum_iter, log_writer):
            for i, (x, y) in enumerate(loader):
                with torch.cuda.amp.autocast():
                    loss = model(x, y)
                loss_value = loss.item()
                loss = loss / accum_iter
                loss_scaler(loss, optimizer, update_grad=(i + 1) % accum_iter == 0)
                if (i + 1) % accum_iter == 0:
                    optimizer.zero_grad()
                if log_writer is not None:
                    log_writer.update(loss=loss_value)
    """,
}


def test_backward_inside_a_loss_scaler_object_and_a_rank0_writer_built_in_another_file(
    tmp_path: Path,
) -> None:
    root = _write(tmp_path, MAE_LIKE)
    found = {f[:2] for f in _found(root)}
    assert ("accum-no-sync-missing", "engine.py") in found
    assert ("rank0-only-loss-log", "engine.py") in found
    assert not any(f[0] == "fp16-no-scaler" for f in found)  # the scaler object scales


def test_a_sync_control_the_loop_never_uses_does_not_silence_accum_no_sync(tmp_path: Path) -> None:
    # issue #27: a no_sync helper that exists in the project but is not used by the accumulation
    # loop skips nothing; used around the micro-step, it does
    helper = """
        import contextlib

        @contextlib.contextmanager
        def ddp_sync(module, sync):
            if sync:
                yield
            else:
                with module.no_sync():
                    yield
    """
    files = dict(MAE_LIKE)
    files["util/dist.py"] = helper
    root = _write(tmp_path, files)
    assert any(f[0] == "accum-no-sync-missing" for f in _found(root))
    files["engine.py"] = (
        files["engine.py"]
        .replace(
            "                with torch.cuda.amp.autocast():\n                    loss = model(x, y)",
            "                with ddp_sync(model, (i + 1) % accum_iter == 0):\n                    loss = model(x, y)",
        )
        .replace(
            "        import torch\n", "        import torch\n        from util.dist import ddp_sync\n", 1
        )
    )
    assert "ddp_sync(model" in files["engine.py"]
    root = _write(tmp_path, files)
    assert not any(f[0] == "accum-no-sync-missing" for f in _found(root))


def test_loader_handed_to_a_trainer_class_in_another_file(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "trainer.py": """
                import torch.nn.functional as F
                from torch.nn.parallel import DistributedDataParallel as DDP

                class Trainer:
                    def __init__(self, model, train_data, optimizer):
                        self.model = DDP(model)
                        self.train_data = train_data
                        self.optimizer = optimizer

                    def _run_batch(self, x, y):
                        self.optimizer.zero_grad()
                        F.cross_entropy(self.model(x), y).backward()
                        self.optimizer.step()

                    def train(self, epochs):
                        for _ in range(epochs):
                            for x, y in self.train_data:
                                self._run_batch(x, y)
            """,
            "main.py": """
                from torch.utils.data import DataLoader
                from trainer import Trainer

                def main(dataset, model, optimizer):
                    train_data = DataLoader(dataset, batch_size=32, shuffle=True)
                    Trainer(model, train_data, optimizer).train(10)
            """,
        },
    )
    assert ("sampler-missing", "main.py", None) in _found(root)
    assert not any(f[0] == "sampler-missing" for f in _found(root, project=False))


def test_project_print0_and_relative_imports(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/logging_utils.py": """
                import os

                def print0(*args):
                    if int(os.environ.get("RANK", 0)) == 0:
                        print(*args)
            """,
            "pkg/train.py": """
                from .logging_utils import print0 as say

                def train(model, loader, optimizer):
                    for x, y in loader:
                        loss = model(x, y)
                        loss.backward()
                        optimizer.step()
                        say(f"loss {loss.item()}")
            """,
        },
    )
    assert ("rank0-only-loss-log", "pkg/train.py", None) in _found(root)


def test_project_mode_on_a_directory_without_python_is_empty(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing here", encoding="utf-8")
    result = lint_paths([tmp_path])
    assert result.files == 0 and not result.findings and not result.diagnostics


def test_a_single_process_script_stays_single_process_in_a_ddp_project(tmp_path: Path) -> None:
    # issue #27: another file wrapping DDP must not make a plain script's loader "distributed"
    root = _write(
        tmp_path,
        {
            "train_ddp.py": """
                import torch
                from torch.utils.data import DataLoader, DistributedSampler
                from torch.nn.parallel import DistributedDataParallel as DDP

                def main(ds, model, opt):
                    torch.distributed.init_process_group("nccl")
                    model = DDP(model)
                    loader = DataLoader(ds, sampler=DistributedSampler(ds), batch_size=8)
                    for x, y in loader:
                        model(x, y).backward()
                        opt.step()
            """,
            "train_single.py": """
                from torch.utils.data import DataLoader

                def main(ds, model, opt):
                    loader = DataLoader(ds, shuffle=True, batch_size=8)
                    for x, y in loader:
                        model(x, y).backward()
                        opt.step()
            """,
            "train_rank_aware.py": """
                import os
                from torch.utils.data import DataLoader

                def main(ds, model, opt):
                    local_rank = int(os.environ["LOCAL_RANK"])
                    loader = DataLoader(ds, shuffle=True, batch_size=8)
                    for x, y in loader:
                        model(x, y).backward()
                        opt.step()
            """,
        },
    )
    found = {f[:2] for f in _found(root) if f[0] == "sampler-missing"}
    assert found == {("sampler-missing", "train_rank_aware.py")}


def test_project_module_used_as_a_model_registry(tmp_path: Path) -> None:
    # vicreg-style ``resnet.__dict__[args.arch]()`` where resnet.py is the project's own module
    root = _write(
        tmp_path,
        {
            "resnet.py": """
                import torch.nn as nn

                def resnet50():
                    return nn.Sequential(nn.Conv2d(3, 64, 7), nn.BatchNorm2d(64))
            """,
            "evaluate.py": """
                import torch
                import resnet

                def main(args):
                    model = resnet.__dict__[args.arch]()
                    model = torch.nn.parallel.DistributedDataParallel(model)
            """,
        },
    )
    assert ("batchnorm-unsynced", "evaluate.py", None) in _found(root)
    assert not any(f[0] == "batchnorm-unsynced" for f in _found(root, project=False))
