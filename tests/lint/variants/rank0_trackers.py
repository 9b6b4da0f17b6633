"""Experiment trackers' own record calls (round 25): fastNLP's ``fitlog.add_loss(value, name=...,
step=...)`` records its argument like ``writer.add_scalar`` does, so under a rank-0 test it logs rank 0's
own loss (Diffusion-BERT's ``if dist.get_rank() == 0: fitlog.add_loss(train_loss / logging_steps,
...)``); the all-reduced loss, or a module's ``add_loss`` that records nothing (Keras-style
``self.add_loss``), is no finding."""

from tests.lint.variants.rank0_structure import HEAD, SETUP, STEP

R = "rank0-only-loss-log"
C = {}

FITLOG = (
    HEAD.replace("import wandb\n", "import wandb\nimport fitlog\n")
    + SETUP
    + """    train_loss = 0.0
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
    + STEP
    + """            train_loss += loss.item()
            if (step + 1) % args.logging_steps == 0:
                REDUCE
                if dist.get_rank() == 0:
                    fitlog.add_loss(train_loss / args.logging_steps, name="train_loss", step=step)
                train_loss = 0.0
"""
)
C["fitlog_add_loss_rank0"] = (R, True, {"train.py": FITLOG.replace("REDUCE", "pass")}, "train.py")
C["NEG_fitlog_add_loss_of_the_reduced_loss"] = (
    R,
    False,
    {
        "train.py": FITLOG.replace(
            "REDUCE",
            "t = torch.tensor(train_loss).cuda()\n"
            "                dist.all_reduce(t)\n"
            "                train_loss = t.item() / dist.get_world_size()",
        )
    },
    "train.py",
)
C["NEG_add_loss_of_another_object"] = (
    R,
    False,
    {"train.py": FITLOG.replace("REDUCE", "pass").replace("fitlog.add_loss(", "model.add_loss(")},
    "train.py",
)

# A writer attached later on rank 0 only (round 28): UNITER's module-level ``TB_LOGGER =
# TensorboardLogger()`` holds no SummaryWriter until ``TB_LOGGER.create(path)``, which the training
# scripts call under ``if rank == 0:``; every write goes through that writer (a no-op while it is None),
# so ``TB_LOGGER.add_scalar("loss", running_loss.val, step)`` writes rank 0's own loss. The meter is fed
# by calling it (``running_loss(loss.item())``). Attached on every rank, or fed the all-reduced loss:
# no finding.
ATTACHED_LOGGER = """
import math
from torch.utils.tensorboard import SummaryWriter


class TensorboardLogger(object):
    def __init__(self):
        self._logger = None
        self._global_step = 0

    def create(self, path):
        self._logger = SummaryWriter(path)

    def noop(self, *args, **kwargs):
        return

    def step(self):
        self._global_step += 1

    def log_scaler_dict(self, log_dict, prefix=""):
        if self._logger is None:
            return
        for name, value in log_dict.items():
            if isinstance(value, dict):
                self.log_scaler_dict(value, prefix=f"{prefix}{name}")
            else:
                self._logger.add_scalar(f"{prefix}{name}", value, self._global_step)

    def __getattr__(self, name):
        if self._logger is None:
            return self.noop
        return self._logger.__getattribute__(name)


TB_LOGGER = TensorboardLogger()


class RunningMeter(object):
    def __init__(self, name, val=None, smooth=0.99):
        self._name = name
        self._sm = smooth
        self._val = val

    def __call__(self, value):
        val = value if self._val is None else value * (1 - self._sm) + self._val * self._sm
        if not math.isnan(val):
            self._val = val

    @property
    def val(self):
        return 0 if self._val is None else self._val
"""
ATTACHED_TRAIN = (
    HEAD
    + "from utils.logger import TB_LOGGER, RunningMeter\n"
    + SETUP
    + """    if rank == 0:
        TB_LOGGER.create(os.path.join(args.output_dir, "log"))
    running_loss = RunningMeter("loss")
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
    + STEP
    + """            FEED
            TB_LOGGER.add_scalar("loss", running_loss.val, step)
            TB_LOGGER.step()
"""
)
FEED_LOCAL = "running_loss(loss.item())"
FEED_REDUCED = (
    "t = loss.detach().clone()\n"
    "            dist.all_reduce(t)\n"
    "            running_loss(t.item() / dist.get_world_size())"
)
C["writer_attached_on_rank0_meter_called"] = (
    R,
    True,
    {"utils/logger.py": ATTACHED_LOGGER, "train.py": ATTACHED_TRAIN.replace("FEED", FEED_LOCAL)},
    "train.py",
)
C["NEG_writer_attached_on_every_rank"] = (
    R,
    False,
    {
        "utils/logger.py": ATTACHED_LOGGER,
        "train.py": ATTACHED_TRAIN.replace("FEED", FEED_LOCAL).replace(
            "    if rank == 0:\n        TB_LOGGER.create(", "    if True:\n        TB_LOGGER.create("
        ),
    },
    "train.py",
)
C["NEG_writer_attached_on_rank0_meter_fed_reduced"] = (
    R,
    False,
    {"utils/logger.py": ATTACHED_LOGGER, "train.py": ATTACHED_TRAIN.replace("FEED", FEED_REDUCED)},
    "train.py",
)
C["NEG_writer_class_that_also_prints_without_writer"] = (
    R,
    False,
    {
        "utils/logger.py": ATTACHED_LOGGER.replace(
            "    def noop(self, *args, **kwargs):\n        return\n",
            "    def noop(self, *args, **kwargs):\n        print(*args)\n",
        ),
        "train.py": ATTACHED_TRAIN.replace("FEED", FEED_LOCAL),
    },
    "train.py",
)
