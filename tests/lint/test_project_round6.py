"""Project mode, round 6 of issue #27 (fix6a): facts reached through branch-chosen imports and
through objects handed to constructors.

Each case is a small multi-file project shaped like a real script that the linter missed; linting
the directory must find the pitfall (and the corrected variant must stay silent: precision).
"""

from __future__ import annotations

from pathlib import Path

from ddp_doctor.lint.engine import lint_paths
from tests.lint.project_facts import found_gated as _found
from tests.lint.project_facts import write_files as _write

# FixMatch-pytorch: the model module is chosen by importing one of two modules under one alias in
# two branches of a nested helper; the attribute called exists in only one of them.
BRANCH_IMPORTS = {
    "models/__init__.py": "",
    "models/wideresnet.py": """
        import torch.nn as nn

        class WideResNet(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.bn = nn.BatchNorm2d(n)

        def build_wideresnet(depth):
            return WideResNet(depth)
    """,
    "models/resnext.py": """
        import torch.nn as nn

        class ResNeXt(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.bn = nn.BatchNorm2d(n)

        def build_resnext(depth):
            return ResNeXt(depth)
    """,
    "train.py": """
        import torch

        def main(args):
            def create_model(args):
                if args.arch == "wideresnet":
                    import models.wideresnet as models
                    model = models.build_wideresnet(depth=28)
                elif args.arch == "resnext":
                    import models.resnext as models
                    model = models.build_resnext(depth=29)
                return model

            torch.distributed.init_process_group("nccl")
            model = create_model(args)
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank])
            return model
    """,
}


def test_a_module_imported_under_one_alias_in_two_branches_resolves_by_the_attribute_used(
    tmp_path: Path,
) -> None:
    root = _write(tmp_path, BRANCH_IMPORTS)
    assert ("batchnorm-unsynced", "train.py", None) in _found(root)


def test_an_attribute_both_branch_imports_define_stays_unresolved(tmp_path: Path) -> None:
    # which module runs is a runtime choice; when both define the name and only one builds
    # BatchNorm, the call is not known to build it
    files = dict(BRANCH_IMPORTS)
    files["models/resnext.py"] = """
        import torch.nn as nn

        class Mixer(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.norm = nn.LayerNorm(n)

        def build_wideresnet(depth):
            return Mixer(depth)
    """
    files["train.py"] = files["train.py"].replace("models.build_resnext", "models.build_wideresnet")
    root = _write(tmp_path, files)
    assert not any(f[0] == "batchnorm-unsynced" for f in _found(root))


# neuraloperator: a rank-0 flag returned in a tuple by a setup helper, handed to a trainer's
# constructor, kept as ``self.verbose`` and tested in another file before the loss is printed.
HANDED_GATE = {
    "pkg/__init__.py": "",
    "pkg/setup.py": """
        import torch.distributed as dist

        def setup(config):
            if config.distributed:
                dist.init_process_group("nccl")
                is_logger = dist.get_rank() == 0
                device = "cuda"
            else:
                is_logger = True
                device = "cpu"
            return device, is_logger
    """,
    "pkg/trainer.py": """
        import torch

        class Trainer:
            def __init__(self, model, verbose=False):
                self.model = torch.nn.parallel.DistributedDataParallel(model)
                self.verbose = verbose

            def train(self, loader, optimizer):
                avg_loss = 0.0
                for x in loader:
                    loss = self.model(x).mean()
                    loss.backward()
                    optimizer.step()
                    avg_loss += loss.item()
                if self.verbose:
                    print(f"avg_loss={avg_loss:.4f}")
    """,
    "train.py": """
        from pkg.setup import setup
        from pkg.trainer import Trainer

        def main(config, model, loader, optimizer):
            device, is_logger = setup(config)
            trainer = Trainer(model, verbose=config.verbose and is_logger)
            trainer.train(loader, optimizer)
    """,
}


def test_a_rank0_flag_returned_in_a_tuple_and_kept_by_a_constructor_guards_the_log(tmp_path: Path) -> None:
    root = _write(tmp_path, HANDED_GATE)
    assert ("rank0-only-loss-log", "pkg/trainer.py", None) in _found(root)
    assert not any(f[0] == "rank0-only-loss-log" for f in _found(root, project=False))


def test_a_constructor_flag_not_rank0_at_every_construction_is_not_a_guard(tmp_path: Path) -> None:
    files = dict(HANDED_GATE)
    files["bench.py"] = """
        from pkg.trainer import Trainer

        def bench(model, loader, optimizer):
            Trainer(model, verbose=True).train(loader, optimizer)
    """
    root = _write(tmp_path, files)
    assert not any(f[0] == "rank0-only-loss-log" for f in _found(root))


def test_a_flag_true_on_every_rank_is_not_a_rank0_test(tmp_path: Path) -> None:
    # ``is_logger = True`` outside the branch that tests the rank: every rank logs
    files = dict(HANDED_GATE)
    files["pkg/setup.py"] = """
        import torch.distributed as dist

        def setup(config):
            is_logger = True
            if config.quiet:
                is_logger = dist.get_rank() == 0
            return "cuda", is_logger
    """
    root = _write(tmp_path, files)
    assert not any(f[0] == "rank0-only-loss-log" for f in _found(root))


# CosyVoice (wenet-derived): the executor hands its step dict, which carries the loss dict and the
# configuration, to log functions of another module: from the training loop (the local loss, logged
# on the accumulation boundary: flagged) and from an ``@torch.inference_mode()`` validation pass (its
# own validation losses: not the training loss).
HANDED_FROM_VALIDATION = {
    "utils/train_utils.py": """
        def batch_forward(model, batch, info_dict):
            info_dict["loss_dict"] = model(batch)
            return info_dict

        def batch_backward(info_dict):
            loss = info_dict["loss_dict"]["loss"] / info_dict["accum_grad"]
            loss.backward()
            info_dict["loss_dict"]["loss"] = loss.detach()
            return info_dict

        def log_per_step(writer, info_dict):
            if writer is not None:
                if info_dict["train_engine"] == "torch_ddp" and (info_dict["batch_idx"] + 1) % info_dict["accum_grad"] == 0:
                    for k, v in info_dict["loss_dict"].items():
                        writer.add_scalar(k, v)

        def log_per_save(writer, info_dict):
            if writer is not None:
                for k, v in info_dict["loss_dict"].items():
                    writer.add_scalar(k, v)
    """,
    "executor.py": """
        import torch
        from utils.train_utils import batch_backward, batch_forward, log_per_save, log_per_step

        class Executor:
            def train_one_epoch(self, model, loader, optimizer, writer, info_dict):
                for batch_idx, batch in enumerate(loader):
                    info_dict["batch_idx"] = batch_idx
                    info_dict = batch_forward(model, batch, info_dict)
                    info_dict = batch_backward(info_dict)
                    optimizer.step()
                    log_per_step(writer, info_dict)
                self.cv(model, loader, writer, info_dict)

            @torch.inference_mode()
            def cv(self, model, loader, writer, info_dict):
                total = {}
                for batch in loader:
                    info_dict = batch_forward(model, batch, info_dict)
                    total["loss"] = info_dict["loss_dict"]["loss"].item()
                info_dict["loss_dict"] = total
                log_per_save(writer, info_dict)
    """,
    "train.py": """
        import torch
        from torch.utils.tensorboard import SummaryWriter
        from executor import Executor

        def main(model, loader, optimizer):
            torch.distributed.init_process_group("nccl")
            model = torch.nn.parallel.DistributedDataParallel(model)
            writer = None
            if torch.distributed.get_rank() == 0:
                writer = SummaryWriter()
            Executor().train_one_epoch(model, loader, optimizer, writer, {})
    """,
}


def test_a_validation_pass_hands_its_own_losses_to_a_log_function(tmp_path: Path) -> None:
    root = _write(tmp_path, HANDED_FROM_VALIDATION)
    found = [f for f in lint_paths([root], project=True).findings if f.id == "rank0-only-loss-log"]
    assert [(Path(f.path or "").name, f.line) for f in found] == [("train_utils.py", 16)]
