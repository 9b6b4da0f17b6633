"""Project mode: facts that live in another file of the directory (lint/project.py).

Each case is a small multi-file project; linting the directory must find what linting the file
alone cannot prove (and file mode must stay silent: precision).
"""

from __future__ import annotations

from pathlib import Path

from ddp_doctor.lint.engine import lint_paths
from tests.lint.project_facts import found_gated as _found
from tests.lint.project_facts import write_files as _write

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


def test_loss_log_returned_by_a_method_of_a_model_built_by_configuration(tmp_path: Path) -> None:
    # KAIR: ``logs = model.current_log()`` where ``model`` comes from a factory; both model classes
    # return ``self.log_dict`` that their training method fills (one from a term of its total).
    # Their base class merges BatchNorm with a helper that only inspects it, and reads
    # find_unused_parameters through a variable whose fallback is True.
    root = _write(
        tmp_path,
        {
            "utils/bnorm.py": """
                import torch.nn as nn

                def merge_bn(model):
                    for m in model.children():
                        if isinstance(m, nn.BatchNorm2d):
                            m.eval()
            """,
            "models/model_base.py": """
                import torch
                from torch.nn.parallel import DistributedDataParallel
                from utils.bnorm import merge_bn

                class ModelBase:
                    def __init__(self, opt):
                        self.opt = opt

                    def model_to_device(self, network):
                        find_unused_parameters = self.opt.get("find_unused_parameters", True)
                        return DistributedDataParallel(network, find_unused_parameters=find_unused_parameters)

                    def merge_bnorm(self):
                        merge_bn(self.netG)
            """,
            "models/model_plain.py": """
                from models.model_base import ModelBase

                class ModelPlain(ModelBase):
                    def optimize_parameters(self, step):
                        self.optimizer.zero_grad()
                        G_loss = self.lossfn(self.netG(self.L), self.H)
                        G_loss.backward()
                        self.optimizer.step()
                        self.log_dict["G_loss"] = G_loss.item()

                    def current_log(self):
                        return self.log_dict
            """,
            "models/model_gan.py": """
                from models.model_base import ModelBase

                class ModelGAN(ModelBase):
                    def optimize_parameters(self, step):
                        loss_G_total = 0
                        G_loss = self.G_lossfn_weight * self.G_lossfn(self.netG(self.L), self.H)
                        loss_G_total += G_loss
                        loss_G_total.backward()
                        self.log_dict["G_loss"] = G_loss.item()

                    def current_log(self):
                        return self.log_dict
            """,
            "models/select_model.py": """
                def define_Model(opt):
                    if opt["model"] == "gan":
                        from models.model_gan import ModelGAN as M
                    else:
                        from models.model_plain import ModelPlain as M
                    return M(opt)
            """,
            "main_train.py": """
                import logging
                from models.select_model import define_Model

                def main(opt, train_loader):
                    logger = logging.getLogger("train")
                    model = define_Model(opt)
                    for step, data in enumerate(train_loader):
                        model.optimize_parameters(step)
                        if step % 100 == 0 and opt["rank"] == 0:
                            logs = model.current_log()
                            message = f"<iter {step}> "
                            for k, v in logs.items():
                                message += f"{k}: {v:.3e} "
                            logger.info(message)
            """,
        },
    )
    found = _found(root)
    assert ("rank0-only-loss-log", "main_train.py", None) in found
    assert (
        "find-unused-true",
        "models/model_base.py",
        "find_unused_parameters not set in the configuration (default True)",
    ) in found
    assert not any(f[0] == "batchnorm-unsynced" for f in found)
    assert not any(f[0] == "rank0-only-loss-log" for f in _found(root, project=False))


def test_loss_returned_through_a_timing_helper_in_another_file(tmp_path: Path) -> None:
    # MSN: ``(loss, ...), etime = gpu_timer(train_step)`` with gpu_timer in src/utils.py, logged by a
    # logger that main.py silences on ranks other than 0; the elapsed time alone is not the loss.
    root = _write(
        tmp_path,
        {
            "src/utils.py": """
                import torch

                def init_distributed():  # (a file without any fact word is not summarised)
                    return torch.distributed.get_rank()

                def gpu_timer(closure, log_timings=True):
                    start = torch.cuda.Event(enable_timing=True)
                    result = closure()
                    elapsed_time = start.elapsed_time(start)
                    return result, elapsed_time
            """,
            "main.py": """
                import logging
                import torch.distributed as dist
                from src.msn_train import main as msn  # the setup runs in the trainer's process

                def process_main(rank):
                    logger = logging.getLogger()
                    if rank == 0:
                        logger.setLevel(logging.INFO)
                    else:
                        logger.setLevel(logging.ERROR)
                    msn(None, None, None, None)
            """,
            "src/msn_train.py": """
                import logging
                from torch.nn.parallel import DistributedDataParallel
                from src.utils import gpu_timer

                logger = logging.getLogger()

                def main(encoder, loader, optimizer, loss_meter):
                    encoder = DistributedDataParallel(encoder)
                    for itr, udata in enumerate(loader):
                        def train_step():
                            optimizer.zero_grad()
                            loss = encoder(udata).mean()
                            loss.backward()
                            optimizer.step()
                            return (float(loss), optimizer.param_groups[0]["lr"])

                        (loss, _new_lr), etime = gpu_timer(train_step)
                        loss_meter.update(loss)
                        logger.info("[%d] loss: %.3f" % (itr, loss_meter.avg))
                        logger.info("[%d] %d ms" % (itr, etime))
            """,
        },
    )
    lines = [
        f.line
        for f in lint_paths([root]).findings
        if f.id == "rank0-only-loss-log" and f.path and f.path.endswith("msn_train.py")
    ]
    assert lines == [20]  # the loss line, not the elapsed-time line after it
    assert not any(f[0] == "rank0-only-loss-log" for f in _found(root, project=False))


def test_compile_hidden_in_a_method_and_a_model_built_by_an_experiment_object(tmp_path: Path) -> None:
    # VAR: ``m = args.compile_model(m, args.tfast)`` then ``(DDP if dist.initialized() else NullDDP)(m)``.
    # YOLOX: ``self.exp.get_model()`` where most experiment classes build BatchNorm models through the
    # package's re-exports (``from yolox.models import YOLOX``).
    root = _write(
        tmp_path,
        {
            "utils/arg_util.py": """
                import torch

                class Args:
                    tfast: int = 0

                    def compile_model(self, m, fast):
                        if fast == 0:
                            return m
                        return torch.compile(m) if hasattr(torch, "compile") else m
            """,
            "train_var.py": """
                import torch.distributed as dist
                from torch.nn.parallel import DistributedDataParallel as DDP
                from utils import arg_util

                def main(model, NullDDP):
                    args = arg_util.Args()
                    model = args.compile_model(model, args.tfast)
                    model = (DDP if dist.is_initialized() else NullDDP)(model, device_ids=[0])
            """,
            "yolox/models/__init__.py": """
                from .network_blocks import BaseConv
                from .yolox import YOLOX
            """,
            "yolox/models/network_blocks.py": """
                import torch.nn as nn

                class BaseConv(nn.Module):
                    def __init__(self, c):
                        super().__init__()
                        self.bn = nn.BatchNorm2d(c)
            """,
            "yolox/models/yolox.py": """
                import torch.nn as nn
                from .network_blocks import BaseConv

                class YOLOX(nn.Module):
                    def __init__(self, backbone=None):
                        super().__init__()
                        self.backbone = backbone or BaseConv(16)
            """,
            "yolox/exp/base_exp.py": """
                class BaseExp:
                    def get_model(self):
                        pass
            """,
            "yolox/exp/yolox_base.py": """
                from yolox.exp.base_exp import BaseExp

                class Exp(BaseExp):
                    def get_model(self):
                        from yolox.models import YOLOX
                        self.model = YOLOX()
                        return self.model
            """,
            "exps/nano.py": """
                from yolox.exp.yolox_base import Exp as MyExp

                class Exp(MyExp):
                    def get_model(self):
                        from yolox.models import YOLOX, BaseConv
                        return YOLOX(BaseConv(8))
            """,
            "yolox/core/trainer.py": """
                from torch.nn.parallel import DistributedDataParallel as DDP

                class Trainer:
                    def __init__(self, exp):
                        self.exp = exp

                    def before_train(self):
                        model = self.exp.get_model()
                        self.model = DDP(model, device_ids=[0])
            """,
        },
    )
    found = _found(root)
    assert ("compile-before-ddp", "train_var.py", "`args.tfast` enables compile in `compile_model`") in found
    assert ("batchnorm-unsynced", "yolox/core/trainer.py", None) in found
    file_mode = _found(root, project=False)
    assert not any(f[0] in ("compile-before-ddp", "batchnorm-unsynced") for f in file_mode)


def test_backward_in_a_project_method_and_a_logger_known_by_its_annotation(tmp_path: Path) -> None:
    # VAR: ``self.var_opt.backward_clip_step(loss=loss, ...)`` runs backward in utils/amp_sc.py;
    # ``tb_lg: TensorboardLogger`` logs its keyword arguments (utils/misc.py) under ``dist.is_master()``.
    # llm.c: a helper that dumps tensors to a file (and prints only a shape) is no logger of the loss.
    root = _write(
        tmp_path,
        {
            "utils/amp_sc.py": """
                class AmpOptimizer:
                    def __init__(self, optimizer, scaler):
                        self.optimizer, self.scaler = optimizer, scaler

                    def backward_clip_step(self, stepping, loss):
                        self.scaler.scale(loss).backward()
                        if stepping:
                            self.scaler.step(self.optimizer)
                        return None, None

                class Closure:
                    def step(self, loss):  # a generic name: ``scheduler.step(epoch)`` is not this
                        loss.backward()
            """,
            "utils/misc.py": """
                class TensorboardLogger:
                    def __init__(self, writer):
                        self.writer = writer

                    def update(self, head="scalar", step=None, **kwargs):
                        for k, v in kwargs.items():
                            self.writer.add_scalar(f"{head}/{k}", v, step)
            """,
            "utils/dump.py": """
                def write_state(model, x, loss, filename):
                    print(f"parameters: {sum(p.numel() for p in model.parameters())}")
                    with open(filename, "wb") as f:
                        f.write(loss.cpu().numpy().tobytes())
            """,
            "trainer.py": """
                import torch.distributed as dist
                from torch.nn.parallel import DistributedDataParallel as DDP
                from utils.amp_sc import AmpOptimizer
                from utils.dump import write_state
                from utils.misc import TensorboardLogger

                class Trainer:
                    def __init__(self, model, var_opt: AmpOptimizer):
                        self.model = DDP(model)
                        self.var_opt = var_opt

                    def train_step(self, x, y, g_it, tb_lg: TensorboardLogger):
                        loss = self.model(x, y)
                        grad_norm, scale_log2 = self.var_opt.backward_clip_step(loss=loss, stepping=True)
                        if dist.get_rank() == 0:
                            tb_lg.update(head="AR_iter_loss", loss=loss.item(), step=g_it)
                            tb_lg.update(head="AR_iter_schedule", scale=scale_log2, step=g_it)
                            write_state(self.model, x, loss, "debug.bin")

                    def end_epoch(self, scheduler, epoch):
                        scheduler.step(epoch)
                        if dist.get_rank() == 0:
                            print(f"epoch {epoch} done")
            """,
        },
    )
    lines = [
        f.line
        for f in lint_paths([root]).findings
        if f.id == "rank0-only-loss-log" and f.path and f.path.endswith("trainer.py")
    ]
    assert lines == [17]  # the loss update only: not the scale, not the tensor dump
    assert not any(f[0] == "rank0-only-loss-log" for f in _found(root, project=False))


def test_autocast_dtype_from_a_config_property_that_can_be_float16(tmp_path: Path) -> None:
    """OLMo style: ``torch.autocast("cuda", dtype=self.cfg.autocast_precision)`` where the config's
    property returns ``torch.float16`` for one precision setting: float16 under that setting (gated),
    with no GradScaler in the training code (a test's does not count). A property that only returns bfloat16/float32 is not float16."""
    config = """
        import torch

        class TrainConfig:
            precision: str = "amp_bf16"

            @property
            def autocast_precision(self) -> torch.dtype:
                if self.precision == "amp_bf16":
                    return torch.bfloat16
                elif self.precision == "amp_fp16":
                    return torch.float16
                return torch.float32
    """
    trainer = """
        import torch

        class Trainer:
            def __init__(self, cfg, model, optim):
                self.cfg, self.model, self.optim = cfg, model, optim

            def train_batch(self, batch):
                with torch.autocast("cuda", enabled=True, dtype=self.cfg.autocast_precision):
                    loss = self.model(batch).mean()
                loss.backward()
                self.optim.step()
    """
    # a test of the repository that uses a GradScaler scales its own loss, not the trainer's
    test = """
        import torch

        def test_step(model, batch):
            scaler = torch.cuda.amp.GradScaler()
            scaler.scale(model(batch).mean()).backward()
    """
    root = _write(
        tmp_path / "fp16", {"olmo/config.py": config, "olmo/train.py": trainer, "tests/model_test.py": test}
    )
    found = _found(root)
    assert [(i, p) for i, p, _ in found] == [("fp16-no-scaler", "olmo/train.py")]
    assert 'self.precision == "amp_fp16"' in (next(iter(found))[2] or "")
    assert _found(root, project=False) == set()
    bf16 = _write(
        tmp_path / "bf16",
        {"olmo/config.py": config.replace("torch.float16", "torch.float32"), "olmo/train.py": trainer},
    )
    assert _found(bf16) == set()


def test_a_meter_spelled_like_the_projects_synchronised_meters_is_synced(tmp_path: Path) -> None:
    """jukebox style: ``metrics = Metrics()`` in a logging helper (its ``update`` all-reduces), handed
    to ``train(..., metrics)``; what ``train`` returns from it and the rank-0 print of that are global
    values. When the project also builds an unsynchronised meter under the same spelling, the
    spelling says nothing and the rank-0 print is flagged."""
    utils = """
        import torch
        import torch.distributed as dist

        class Metrics:
            def __init__(self):
                self.sum, self.n = {}, {}

            def update(self, tag, val, batch):
                total = torch.tensor(val * batch)
                count = torch.tensor(batch)
                dist.all_reduce(total)
                dist.all_reduce(count)
                self.sum[tag] = self.sum.get(tag, 0.0) + total.item()
                self.n[tag] = self.n.get(tag, 0.0) + count.item()

            def avg(self, tag):
                return self.sum[tag] / self.n[tag]

        def init_logging():
            metrics = Metrics()
            return metrics
    """
    train = """
        import torch.distributed as dist
        from utils import init_logging

        def train(model, loader, opt, metrics):
            for x in loader:
                loss = model(x).mean()
                loss.backward()
                opt.step()
                metrics.update("loss", loss.item(), x.shape[0])
            return {"loss": metrics.avg("loss")}

        def run(model, loader, opt):
            metrics = init_logging()
            for epoch in range(10):
                stats = train(model, loader, opt, metrics)
                if dist.get_rank() == 0:
                    print("Train", stats)
    """
    root = _write(tmp_path / "synced", {"utils.py": utils, "train.py": train})
    assert _found(root) == set()
    local = """
        class LocalMeter:
            def __init__(self):
                self.values = []

            def update(self, tag, val, batch):
                self.values.append(val)

        def evaluate(model, loader):
            metrics = LocalMeter()
            for x in loader:
                metrics.update("loss", model(x).mean().item(), x.shape[0])
            return metrics
    """
    mixed = _write(tmp_path / "mixed", {"utils.py": utils, "train.py": train, "local.py": local})
    assert {(i, p) for i, p, _ in _found(mixed)} == {("rank0-only-loss-log", "train.py")}


def test_a_log_function_behind_a_rank0_decorator_logs_on_rank0_only(tmp_path: Path) -> None:
    """BasicSR/mmcv style: ``@master_only`` (its wrapper calls the function only when the rank is
    0) on a project logging function; the training loop hands it the local loss. A decorator whose
    wrapper calls the function on every rank (a timer) changes nothing."""
    dist_util = """
        import functools
        import torch.distributed as dist

        def master_only(func):
            @functools.wraps(func)
            def wrapper(*args, **kwargs):
                if dist.get_rank() == 0:
                    return func(*args, **kwargs)
            return wrapper

        def timed(func):
            def wrapper(*args, **kwargs):
                return func(*args, **kwargs)
            return wrapper
    """
    logs = """
        from utils.dist_util import master_only, timed

        @master_only
        def log_loss(step, value):
            print(f"step {step}: loss {value:.4f}")

        @timed
        def log_everywhere(step, value):
            print(f"step {step}: loss {value:.4f}")
    """
    train = """
        from utils.logs import log_everywhere, log_loss

        def train(model, loader, optimizer):
            for step, batch in enumerate(loader):
                loss = model(batch).mean()
                loss.backward()
                optimizer.step()
                log_loss(step, loss.item())
                log_everywhere(step, loss.item())
    """
    root = _write(tmp_path, {"utils/dist_util.py": dist_util, "utils/logs.py": logs, "train.py": train})
    result = lint_paths([root], project=True)
    assert [(f.id, Path(f.path or "").name, f.line) for f in result.findings] == [
        ("rank0-only-loss-log", "train.py", 9)
    ]
    assert _found(root, project=False) == set()


def test_autocast_in_a_benchmark_script_of_a_training_project_is_not_training(tmp_path: Path) -> None:
    """The project trains elsewhere (a backward in train.py, no GradScaler); a benchmark script that
    never backprops times a model under float16 autocast: not training. Model code under float16
    autocast (a module's forward) is on the training path and stays flagged."""
    train = """
        from model import Net

        def train(loader, optimizer):
            net = Net()
            for x in loader:
                loss = net(x).mean()
                loss.backward()
                optimizer.step()
    """
    model = """
        import torch

        class Net(torch.nn.Module):
            def forward(self, x):
                with torch.autocast("cuda", dtype=torch.float16):
                    return self.body(x)
    """
    bench = """
        import torch

        def benchmark(model, x):
            with torch.autocast("cuda"):
                return model(x)
    """
    root = _write(tmp_path, {"train.py": train, "model.py": model, "scripts/bench_attention.py": bench})
    assert {(i, p) for i, p, _ in _found(root)} == {("fp16-no-scaler", "model.py")}


SIBLING_SCRIPTS = {
    "ppo_multigpu.py": """
        import torch
        import torch.distributed as dist
        from torch.utils.tensorboard import SummaryWriter

        def main(agent, optimizer, batches, local_rank):
            dist.init_process_group("nccl")
            if local_rank == 0:
                writer = SummaryWriter("runs")
            for step, batch in enumerate(batches):
                loss = agent(batch)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if local_rank == 0:
                    writer.add_scalar("loss", loss.item(), step)
    """,
    "ppo.py": """
        import torch
        from torch.utils.tensorboard import SummaryWriter

        def main(agent, optimizer, batches):
            writer = SummaryWriter("runs")
            for step, batch in enumerate(batches):
                loss = agent(batch)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                writer.add_scalar("loss", loss.item(), step)
    """,
}


def test_a_writer_bound_on_every_rank_is_not_a_siblings_rank0_writer(tmp_path: Path) -> None:
    # holdout-4 (read after its scoring): CleanRL's single-process ppo.py builds its own writer on
    # every rank; the multi-GPU sibling's rank-0 writer of the same name does not make it rank 0's
    found = {f[:2] for f in _found(_write(tmp_path, SIBLING_SCRIPTS))}
    assert ("rank0-only-loss-log", "ppo_multigpu.py") in found
    assert ("rank0-only-loss-log", "ppo.py") not in found


def test_a_loss_computed_in_objective_functions_of_another_module_and_logged_there(tmp_path: Path) -> None:
    """ViLT style: ``training_step`` backprops the sum of the loss items of ``self(batch)``, whose
    ``forward`` merges what objective functions of another module return; each objective logs its
    loss through the Lightning module it is handed (``pl_module.log`` without ``sync_dist``). Its
    accuracy, a synced log and an objective whose result is never backpropagated are not flagged."""
    objectives = """
        import torch.nn.functional as F

        def compute_mlm(pl_module, batch):
            logits = pl_module.head(batch["x"])
            mlm_loss = F.cross_entropy(logits, batch["y"])
            ret = {"mlm_loss": mlm_loss, "mlm_logits": logits}
            loss = pl_module.train_mlm_loss(ret["mlm_loss"])
            acc = pl_module.train_mlm_accuracy(ret["mlm_logits"], batch["y"])
            pl_module.log("mlm/train/loss", loss)
            pl_module.log("mlm/train/accuracy", acc)
            return ret

        def compute_itm(pl_module, batch):
            itm_loss = F.cross_entropy(pl_module.itm(batch["x"]), batch["y"])
            pl_module.log("itm/train/loss", itm_loss, sync_dist=True)
            return {"itm_loss": itm_loss}

        def compute_probe(pl_module, batch):
            probe_loss = F.cross_entropy(pl_module.probe(batch["x"]), batch["y"])
            pl_module.log("probe/loss", probe_loss)
            return {"probe_loss": probe_loss}
    """
    module = """
        import lightning as L
        from modules import objectives

        class Model(L.LightningModule):
            def forward(self, batch):
                ret = dict()
                ret.update(objectives.compute_mlm(self, batch))
                ret.update(objectives.compute_itm(self, batch))
                return ret

            def training_step(self, batch, batch_idx):
                output = self(batch)
                return sum([v for k, v in output.items() if "loss" in k])

            def on_validation_epoch_end(self):
                objectives.compute_probe(self, self.probe_batch)
    """
    root = _write(tmp_path, {"modules/objectives.py": objectives, "modules/model.py": module})
    result = lint_paths([root], project=True)
    assert [(f.id, Path(f.path or "").name, f.line, f.evidence.get("value")) for f in result.findings] == [
        ("rank0-only-loss-log", "objectives.py", 10, "loss")
    ]
    assert _found(root, project=False) == set()


def test_a_loss_module_called_by_the_trainer_logs_its_terms_through_a_rank0_logger(tmp_path: Path) -> None:
    """LlamaGen VQ style: the loss is an ``nn.Module`` of another file whose ``forward`` returns what
    the training loop backprops and logs its terms through the logger it is handed; the logger gets
    handlers only on rank 0 (``logging.basicConfig`` under a rank-0 test). A value of the forward
    that is not a loss (its adaptive weight) is not flagged."""
    logger = """
        import logging
        import torch.distributed as dist

        def create_logger(logging_dir):
            if dist.get_rank() == 0:
                logging.basicConfig(level=logging.INFO, handlers=[logging.StreamHandler()])
                logger = logging.getLogger(__name__)
            else:
                logger = logging.getLogger(__name__)
                logger.addHandler(logging.NullHandler())
            return logger
    """
    loss = """
        import torch.nn as nn
        import torch.nn.functional as F

        class VQLoss(nn.Module):
            def forward(self, inputs, recons, step, logger=None):
                rec_loss = F.mse_loss(inputs, recons)
                adaptive_weight = self.weight(recons)
                loss = rec_loss * adaptive_weight
                if step % 100 == 0:
                    logger.info(f"rec_loss: {rec_loss:.4f}")
                    logger.info(f"adaptive weight: {adaptive_weight:.4f}")
                return loss
    """
    train = """
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from utils.logger import create_logger
        from vq_loss import VQLoss

        def main(model, loader, optimizer):
            logger = create_logger("out")
            model = DDP(model)
            vq_loss = VQLoss()
            for step, x in enumerate(loader):
                loss = vq_loss(x, model(x), step, logger=logger)
                loss.backward()
                optimizer.step()
    """
    root = _write(tmp_path, {"utils/logger.py": logger, "vq_loss.py": loss, "train.py": train})
    result = lint_paths([root], project=True)
    assert [(f.id, Path(f.path or "").name, f.line, f.evidence.get("value")) for f in result.findings] == [
        ("rank0-only-loss-log", "vq_loss.py", 11, "rec_loss")
    ]
    assert _found(root, project=False) == set()


def test_a_method_the_project_calls_only_under_a_rank0_test_logs_on_rank0_only(tmp_path: Path) -> None:
    """lucidrains stylegan2 style: the trainer keeps its loss totals on ``self`` and ``print_log``
    prints them; the command line calls ``model.print_log()`` only under ``if is_main``. A method
    also called on every rank (``print_summary``) is not rank 0's."""
    trainer = """
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP

        class Trainer:
            def __init__(self, model, rank):
                self.model = DDP(model, device_ids=[rank])

            def train(self, batch, optimizer):
                loss = self.model(batch).mean()
                loss.backward()
                optimizer.step()
                self.g_loss = float(loss.item())

            def print_log(self):
                print(f"G: {self.g_loss:.2f}")

            def print_summary(self):
                print(f"G: {self.g_loss:.2f}")
    """
    cli = """
        from trainer import Trainer

        def run(model, rank, loader, optimizer):
            is_main = rank == 0
            trainer = Trainer(model, rank)
            for step, batch in enumerate(loader):
                trainer.train(batch, optimizer)
                if is_main and step % 50 == 0:
                    trainer.print_log()
                trainer.print_summary()
    """
    root = _write(tmp_path, {"trainer.py": trainer, "cli.py": cli})
    result = lint_paths([root], project=True)
    assert [(f.id, Path(f.path or "").name, f.line, f.evidence.get("value")) for f in result.findings] == [
        ("rank0-only-loss-log", "trainer.py", 16, "self.g_loss")
    ]
    assert _found(root, project=False) == set()


def test_a_log_helper_star_imported_from_a_project_module(tmp_path: Path) -> None:
    """StyleTTS2 style: ``from utils import *`` brings ``log_print(message, logger)``, called under
    the main-process test with the local losses in its message; a helper of the same star import
    that logs nothing of its arguments (``save_config``) is not a log."""
    utils = """
        def log_print(message, logger):
            logger.info(message)
            print(message)

        def save_config(path, value):
            with open(path, "w") as f:
                f.write(str(value))
    """
    train = """
        from utils import *

        def train(accelerator, model, loader, optimizer, logger):
            for i, batch in enumerate(loader):
                loss = model(batch).mean()
                accelerator.backward(loss)
                optimizer.step()
                if accelerator.is_main_process:
                    log_print("loss %.5f" % loss.item(), logger)
                    save_config("loss.txt", loss.item())
    """
    root = _write(tmp_path, {"utils.py": utils, "train.py": train})
    result = lint_paths([root], project=True)
    assert [(f.id, Path(f.path or "").name, f.line, f.evidence.get("value")) for f in result.findings] == [
        ("rank0-only-loss-log", "train.py", 10, "loss")
    ]
    assert _found(root, project=False) == set()


def test_a_loss_handed_to_a_log_function_of_another_module_of_the_package(tmp_path: Path) -> None:
    """wenet style: the directory linted is the package itself (its files import
    ``wenet.utils.train_utils``); the executor hands ``info_dict`` (its loss under ``"loss_dict"``) to
    ``log_per_step``, which writes the loss under ``rank == 0``. Its other items (the tag, the step)
    are not the loss, and a validation branch labelled ``cv/...`` logs validation values."""
    train_utils = """
        import os

        def batch_backward(model, info_dict):
            loss = info_dict["loss_dict"]["loss"]
            loss.backward()
            return info_dict

        def log_per_step(writer, info_dict):
            tag = info_dict["tag"]
            step = info_dict.get("step", 0)
            loss_dict = info_dict["loss_dict"]
            rank = int(os.environ.get("RANK", 0))
            if tag == "TRAIN" and rank == 0:
                writer.add_scalar("train/train_loss", loss_dict["loss"], step)
                print(f"step {step} tag {tag}")
            elif rank == 0:
                for name, value in loss_dict.items():
                    writer.add_scalar("cv/{}".format(name), value, step)
    """
    executor = """
        from wenet.utils.train_utils import batch_backward, log_per_step

        def train(model, loader, optimizer, writer):
            for batch in loader:
                info_dict = {"tag": "TRAIN", "loss_dict": model(batch)}
                info_dict = batch_backward(model, info_dict)
                optimizer.step()
                log_per_step(writer, info_dict)
    """
    root = _write(
        tmp_path / "wenet",
        {"__init__.py": "", "utils/train_utils.py": train_utils, "utils/executor.py": executor},
    )
    result = lint_paths([root], project=True)
    assert [(f.id, Path(f.path or "").name, f.line, f.evidence.get("value")) for f in result.findings] == [
        ("rank0-only-loss-log", "train_utils.py", 15, "loss_dict")
    ]
    assert _found(root, project=False) == set()


def test_a_grad_scaler_covers_the_code_it_reaches_not_a_sibling_script(tmp_path: Path) -> None:
    # holdout-4 (read after its scoring): LlamaGen's VQ trainer uses a GradScaler; its FSDP trainer,
    # a sibling entry script sharing no code path with it, trains under float16 with none
    files = {
        "vq_train.py": """
            import torch
            from common import make_loader

            def main(model, optimizer):
                scaler = torch.cuda.amp.GradScaler()
                for x in make_loader():
                    with torch.autocast("cuda", dtype=torch.float16):
                        loss = model(x)
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
        """,
        "train_fsdp.py": """
            import torch
            from common import make_loader

            def main(model, optimizer):
                for x in make_loader():
                    with torch.autocast("cuda", dtype=torch.float16):
                        loss = model(x)
                    loss.backward()
                    optimizer.step()
        """,
        "common.py": """
            def make_loader():
                return []
        """,
        # model code run by a loop that scales: covered by the importer's scaler
        "net.py": """
            import torch

            class Net(torch.nn.Module):
                def forward(self, x):
                    with torch.autocast("cuda", dtype=torch.float16):
                        return self.body(x)
        """,
        "train_net.py": """
            import torch
            from net import Net
            from scaling import build_scaler

            def main(loader, optimizer):
                model, scaler = Net(), build_scaler()
                for x in loader:
                    loss = model(x)
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
        """,
        "scaling.py": """
            import torch

            def build_scaler():
                return torch.cuda.amp.GradScaler()
        """,
    }
    found = {f[:2] for f in _found(_write(tmp_path, files))}
    assert found == {("fp16-no-scaler", "train_fsdp.py")}


def test_a_sync_bn_choice_read_from_the_projects_python_config_defaults(tmp_path: Path) -> None:
    # holdout-3 (SlowFast): the conversion runs only when ``cfg.BN.NORM_TYPE`` names apex SyncBN, and
    # the project's yacs defaults (``_C.BN.NORM_TYPE = "batchnorm"``) say it does not by default:
    # config-gated. Without a readable default (a YAML config, semseg) the conversion is trusted.
    build = """
        import torch
        import torch.nn as nn

        def build_model(cfg):
            model = nn.Sequential(nn.Conv3d(3, 8, 3), nn.BatchNorm3d(8))
            if cfg.BN.NORM_TYPE == "sync_batchnorm_apex":
                import apex
                model = apex.parallel.convert_syncbn_model(model)
            return torch.nn.parallel.DistributedDataParallel(model)
    """
    defaults = """
        from fvcore.common.config import CfgNode

        _C = CfgNode()
        # Model options (a config file is summarised like any file with a relevant word)
        _C.MODEL = CfgNode()
        _C.MODEL.ARCH = "slowfast"
        _C.BN = CfgNode()
        _C.BN.NORM_TYPE = "batchnorm"
    """
    found = _found(_write(tmp_path / "a", {"models/build.py": build, "config/defaults.py": defaults}))
    assert found == {
        ("batchnorm-unsynced", "models/build.py", "NORM_TYPE != 'sync_batchnorm_apex' (the default)")
    }
    assert _found(_write(tmp_path / "b", {"models/build.py": build})) == set()


def test_a_helper_called_for_its_effect_builds_no_batchnorm_model(tmp_path: Path) -> None:
    # library code (torch's ``replicate``): a project helper whose code reaches BatchNorm classes is
    # called for its effect on an argument (its result dropped), then the parameters are wrapped
    files = {
        "norms.py": """
            import torch.nn as nn

            def localize(module):
                for m in module.modules():
                    if isinstance(m, nn.Module):
                        m.extra = nn.BatchNorm2d(1)
                return nn.BatchNorm2d(1)
        """,
        "replicate.py": """
            from torch.nn.parallel import DistributedDataParallel
            from norms import localize

            def replicate(module, **kwargs):
                localize(module)
                return DistributedDataParallel(module, **kwargs)
        """,
        "train.py": """
            from torch.nn.parallel import DistributedDataParallel
            from norms import localize

            def main(module):
                model = localize(module)
                return DistributedDataParallel(model)
        """,
    }
    found = {f[:2] for f in _found(_write(tmp_path, files))}
    assert ("batchnorm-unsynced", "replicate.py") not in found
    assert ("batchnorm-unsynced", "train.py") in found


def test_print_replaced_off_rank0_in_an_imported_module_and_a_message_helper(tmp_path: Path) -> None:
    """holdout-5 (read after its scoring): tabpfn/DeiT install a ``builtins.print`` that prints only
    ``if is_master or force`` from ``utils.py`` (``init_dist`` calls it with ``rank == 0``); the
    training module importing it prints rank 0's local loss. A sibling script sharing no code path
    with ``utils.py`` is not silenced. ColBERT's ``print_message(*s)`` builds its message from its
    arguments before printing it: handed the loss under ``rank < 1`` it logs it."""
    files = {
        "utils.py": """
            import builtins as __builtin__

            import torch.distributed as dist

            def print_on_master_only(is_master):
                builtin_print = __builtin__.print

                def print(*args, **kwargs):
                    force = kwargs.pop("force", False)
                    if is_master or force:
                        builtin_print(*args, **kwargs)

                __builtin__.print = print

            def init_dist(rank):
                dist.init_process_group("nccl")
                print_on_master_only(rank == 0)

            def print_message(*s, condition=True):
                s = " ".join([str(x) for x in s])
                msg = "[now] {}".format(s)
                if condition:
                    print(msg, flush=True)
        """,
        "train.py": """
            from torch.nn.parallel import DistributedDataParallel
            from utils import init_dist

            def train(rank, model, loader, optimizer, criterion):
                init_dist(rank)
                model = DistributedDataParallel(model)
                for x, y in loader:
                    loss = criterion(model(x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    print(f"loss {loss.item():.4f}")
        """,
        "colbert_train.py": """
            from torch.nn.parallel import DistributedDataParallel
            from utils import print_message

            def train(config, model, loader, optimizer, criterion):
                model = DistributedDataParallel(model)
                for i, (x, y) in enumerate(loader):
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    if config.rank < 1:
                        print_message(i, loss.item())
        """,
        "sibling.py": """
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel

            def train(model, loader, optimizer, criterion):
                dist.init_process_group("nccl")
                model = DistributedDataParallel(model)
                for x, y in loader:
                    loss = criterion(model(x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    print(f"rank {dist.get_rank()} loss {loss.item():.4f}")
        """,
    }
    root = _write(tmp_path, files)
    found = {f[:2] for f in _found(root)}
    assert ("rank0-only-loss-log", "train.py") in found
    assert ("rank0-only-loss-log", "colbert_train.py") in found
    assert ("rank0-only-loss-log", "sibling.py") not in found
    # file mode: neither the replacement in utils.py nor the helper's print is visible
    assert not any(f[:2] == ("rank0-only-loss-log", "train.py") for f in _found(root, project=False))


CONTRIEVER_LIKE = {
    "src/data.py": """
        import glob

        import numpy as np
        import torch
        from src import dist_utils

        def load_data(opt):
            return Dataset(load_dataset(opt.path))

        def load_dataset(path):
            files = sorted(glob.glob(path + "/*.pt"))
            mine = list(np.array_split(files, dist_utils.get_world_size()))[dist_utils.get_rank()]
            return torch.cat([torch.load(f) for f in mine])

        class Dataset(torch.utils.data.Dataset):
            def __init__(self, data):
                self.data = data
    """,
    "train.py": """
        import torch
        from torch.nn.parallel import DistributedDataParallel
        from torch.utils.data import DataLoader, RandomSampler
        from src import data

        def train(opt, model, optimizer):
            model = DistributedDataParallel(model)
            train_dataset = data.load_data(opt)
            loader = DataLoader(train_dataset, sampler=RandomSampler(train_dataset), batch_size=8)
            for batch in loader:
                model(batch).mean().backward()
                optimizer.step()
                optimizer.zero_grad()
    """,
}


def test_dataset_from_a_project_loader_that_keeps_this_ranks_files_is_sharded(tmp_path: Path) -> None:
    # contriever: ``load_data`` → ``load_dataset`` keeps ``array_split(files, world)[rank]``
    found = _found(_write(tmp_path, CONTRIEVER_LIKE))
    assert not any(f[0] == "sampler-missing" for f in found)


def test_dataset_from_a_project_loader_of_every_file_is_not_sharded(tmp_path: Path) -> None:
    files = dict(CONTRIEVER_LIKE)
    files["src/data.py"] = files["src/data.py"].replace(
        "list(np.array_split(files, dist_utils.get_world_size()))[dist_utils.get_rank()]", "files"
    )
    found = _found(_write(tmp_path, files))
    assert ("sampler-missing", "train.py", None) in found


TABPFN_LIKE = {
    "utils.py": """
        import torch.nn as nn

        class SeqBN(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.bn = nn.BatchNorm1d(d)
    """,
    "transformer.py": """
        import torch.nn as nn
        from utils import SeqBN

        class TransformerModel(nn.Module):
            def __init__(self, d, input_normalization=False):
                super().__init__()
                self.encoder = nn.Linear(d, d)
                self.input_ln = SeqBN(d) if input_normalization else None
    """,
    "train.py": """
        from torch.nn.parallel import DistributedDataParallel
        from transformer import TransformerModel

        def train(d, loader, optimizer, input_normalization=False):
            model = TransformerModel(d, input_normalization=input_normalization)
            model = DistributedDataParallel(model)
            for x in loader:
                model(x).mean().backward()
                optimizer.step()
    """,
}


def test_batchnorm_built_only_when_a_parameter_off_by_default_asks_is_not_flagged(tmp_path: Path) -> None:
    # TabPFN: ``SeqBN(ninp) if input_normalization else None`` with ``input_normalization=False``
    found = _found(_write(tmp_path, TABPFN_LIKE))
    assert not any(f[0] == "batchnorm-unsynced" for f in found)


def test_batchnorm_behind_a_parameter_on_by_default_is_flagged(tmp_path: Path) -> None:
    files = dict(TABPFN_LIKE)
    files["transformer.py"] = files["transformer.py"].replace(
        "input_normalization=False", "input_normalization=True"
    )
    found = {f[:2] for f in _found(_write(tmp_path, files))}
    assert ("batchnorm-unsynced", "train.py") in found


DROID_LIKE = {
    "extractor.py": """
        import torch.nn as nn

        class ResidualBlock(nn.Module):
            def __init__(self, planes, norm_fn="group"):
                super().__init__()
                if norm_fn == "batch":
                    self.norm1 = nn.BatchNorm2d(planes)
                elif norm_fn == "instance":
                    self.norm1 = nn.InstanceNorm2d(planes)

        class BasicEncoder(nn.Module):
            def __init__(self, output_dim=128, norm_fn="batch"):
                super().__init__()
                if norm_fn == "batch":
                    self.norm1 = nn.BatchNorm2d(64)
                self.layer1 = ResidualBlock(64, norm_fn)
    """,
    "net.py": """
        import torch.nn as nn
        from extractor import BasicEncoder

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fnet = BasicEncoder(output_dim=128, norm_fn="instance")
                self.cnet = BasicEncoder(output_dim=256, norm_fn="none")
    """,
    "train.py": """
        from torch.nn.parallel import DistributedDataParallel
        from net import Net

        def train(loader, optimizer):
            model = DistributedDataParallel(Net())
            for x in loader:
                model(x).mean().backward()
                optimizer.step()
    """,
}


def test_batchnorm_encoder_built_with_another_norm_selected_is_not_flagged(tmp_path: Path) -> None:
    # DROID-SLAM / RAFT: ``BasicEncoder(norm_fn='instance')`` never builds its BatchNorm branch
    found = _found(_write(tmp_path, DROID_LIKE))
    assert not any(f[0] == "batchnorm-unsynced" for f in found)


def test_batchnorm_encoder_with_batch_norm_selected_is_flagged(tmp_path: Path) -> None:
    for selected in ('norm_fn="batch"', 'norm_fn="BN"', "output_dim=7"):  # the default is "batch"
        files = dict(DROID_LIKE)
        files["net.py"] = files["net.py"].replace('norm_fn="none"', selected)
        found = {f[:2] for f in _found(_write(tmp_path / selected[:6], files))}
        assert ("batchnorm-unsynced", "train.py") in found, selected


SPARK_LIKE = {
    "decoder.py": """
        import torch.nn as nn

        class LightDecoder(nn.Module):
            def __init__(self, width, sbn=True):
                super().__init__()
                bn2d = nn.SyncBatchNorm if sbn else nn.BatchNorm2d
                self.body = nn.Sequential(nn.Conv2d(width, width, 3), bn2d(width))
    """,
    "main.py": """
        from torch.nn.parallel import DistributedDataParallel
        from decoder import LightDecoder

        def main(args, loader, optimizer):
            model = LightDecoder(64, sbn=args.sbn)
            model = DistributedDataParallel(model)
            for x in loader:
                model(x).mean().backward()
                optimizer.step()
    """,
}


def test_builder_that_picks_sync_batchnorm_itself_is_not_flagged(tmp_path: Path) -> None:
    # SparK: ``nn.SyncBatchNorm if sbn else nn.BatchNorm2d`` where the layers are built
    found = _found(_write(tmp_path, SPARK_LIKE))
    assert not any(f[0] == "batchnorm-unsynced" for f in found)


def test_builder_with_plain_batchnorm_only_is_flagged(tmp_path: Path) -> None:
    files = dict(SPARK_LIKE)
    files["decoder.py"] = files["decoder.py"].replace(
        "nn.SyncBatchNorm if sbn else nn.BatchNorm2d", "nn.BatchNorm2d"
    )
    found = {f[:2] for f in _found(_write(tmp_path, files))}
    assert ("batchnorm-unsynced", "main.py") in found
