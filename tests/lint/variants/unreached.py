"""Code the run never reaches (round 27, lint/project_reach.py): a training loop in a def or class
nothing in the project names is no event of any run, so nothing is reported inside it; a def named
anywhere (a call, a string, a name built for ``getattr``, a configuration, a framework hook, a file
no one imports) is still read. Dialog_Extension's ``MultiWOZRunner._train``/``train_fs``, two old
loops beside the ``train`` that ``main.py`` calls, showed it."""

A = "accum-no-sync-missing"
R = "rank0-only-loss-log"
C = {}

# runner.py: a runner class whose ``train`` main.py calls; ``{OLD}`` is a second loop of the class.
RUNNER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Runner:
    def __init__(self, net, cfg):
        self.cfg = cfg
        self.model = DDP(net.cuda(), device_ids=[int(cfg.local_rank)])
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def train(self, loader):
        for epoch in range(self.cfg.epochs):
            for x, y in loader:
                loss = self.model(x, y)
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
{OLD}
"""
OLD = """
    def {NAME}(self, loader):
        for step, (x, y) in enumerate(loader):
            loss = self.model(x, y) / self.cfg.accum
            loss.backward()
            if (step + 1) % self.cfg.accum == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""
MAIN = """
import argparse
import torch.distributed as dist
from runner import Runner


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    parser.add_argument("--accum", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=10)
    cfg = parser.parse_args()
    dist.init_process_group("nccl")
    runner = Runner(build_net(), cfg)
    {CALL}


if __name__ == "__main__":
    main()
"""


def project(name="_train", call="runner.train(build_loader())", extra=None):
    files = {
        "runner.py": RUNNER.replace("{OLD}", OLD.replace("{NAME}", name)),
        "main.py": MAIN.replace("{CALL}", call),
    }
    files.update(extra or {})
    return files


# the accumulating loop is a method nothing calls: left alone
C["NEG_old_loop_nothing_calls"] = (A, False, project(), "runner.py")
# ... and one only another unreached method calls (``_train`` -> ``_train_epoch``)
C["NEG_old_loop_called_only_by_unreached_code"] = (
    A,
    False,
    project(
        "_train_epoch",
        extra={
            "runner.py": RUNNER.replace("{OLD}", OLD.replace("{NAME}", "_train_epoch"))
            + "\n    def _train(self):\n        self._train_epoch(self.loader)\n",
        },
    ),
    "runner.py",
)
# the same loop called by main: reported
C["called_loop"] = (A, True, project(call="runner._train(build_loader())"), "runner.py")
# named by a string a run-time lookup builds from (``getattr(runner, f"train_{mode}")``)
C["loop_picked_by_a_built_name"] = (
    A,
    True,
    project(call='getattr(runner, f"train_{cfg.mode}")(build_loader())', name="train_accum"),
    "runner.py",
)
# ... by a literal name handed to getattr
C["loop_picked_by_a_literal_name"] = (
    A,
    True,
    project(call='getattr(runner, "_train")(build_loader())'),
    "runner.py",
)
# ... by a launch script or configuration (``python -c`` / ``entry: _train``)
C["loop_named_in_a_config"] = (A, True, project(extra={"configs/run.yaml": "entry: _train\n"}), "runner.py")
# ... by a file no one imports (a script an outside launcher runs): its calls count
C["loop_called_by_an_unimported_script"] = (
    A,
    True,
    project(
        extra={
            "tools/finetune.py": "def run(runner, loader):\n    runner._train(loader)\n",
        }
    ),
    "runner.py",
)
# a class nothing names: its rank-0 log is no event of the run; once named, it is
VAE = """
import torch
import torch.distributed as dist


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def fit(self, loader):
        for x in loader:
            loss = self.model(x)
            loss.backward()
            self.optimizer.step()


class OldTrainer(Trainer):
    def fit(self, loader):
        for x in loader:
            loss = self.model(x)
            loss.backward()
            self.optimizer.step()
            if dist.get_rank() == 0:
                print(f"loss {loss.item():.4f}")
"""
VAE_MAIN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from trainers import {CLS}

if __name__ == "__main__":
    dist.init_process_group("nccl")
    model = DDP(build_model().cuda())
    trainer = {CLS}(model, torch.optim.SGD(model.parameters(), lr=0.1))
    trainer.fit(build_loader())
"""
C["NEG_rank0_log_in_a_class_nothing_names"] = (
    R,
    False,
    {"trainers.py": VAE, "train.py": VAE_MAIN.replace("{CLS}", "Trainer")},
    "trainers.py",
)
C["rank0_log_in_the_class_the_script_builds"] = (
    R,
    True,
    {"trainers.py": VAE, "train.py": VAE_MAIN.replace("{CLS}", "OldTrainer")},
    "trainers.py",
)
# a module-level ``eval``/``globals()`` lookup may pick any def of its file
C["rank0_log_in_a_file_that_looks_its_names_up"] = (
    R,
    True,
    {
        "trainers.py": VAE + "\n\ndef build(name, *args):\n    return globals()[name](*args)\n",
        "train.py": VAE_MAIN.replace("{CLS}", "Trainer"),
    },
    "trainers.py",
)
# a module whose classes are picked by a run-time name (``getattr(tasks, cfg.task)`` after ``from .
# import tasks``, trainee-ai's ``skp/builder.py``): any class of it may run, named or not
C["rank0_log_in_a_class_picked_from_its_module_by_name"] = (
    R,
    True,
    {
        "pkg/__init__.py": "",
        "pkg/trainers.py": VAE,
        "pkg/builder.py": "from . import trainers\n\nDEFAULT = trainers.Trainer\n\n\ndef build(name, *args):\n"
        "    return getattr(trainers, name)(*args)\n",
        "train.py": VAE_MAIN.replace("from trainers import {CLS}", "from pkg.builder import build")
        .replace("{CLS}(model", "build(cfg.trainer, model")
        .replace(
            '    dist.init_process_group("nccl")', '    cfg = parse()\n    dist.init_process_group("nccl")'
        ),
    },
    "pkg/trainers.py",
)
# a library's trainer class the project never builds (its README does: ``Trainer(...).train()``):
# any of its methods may run, even beside ones the project calls by name (lucidrains'
# denoising-diffusion-pytorch, re-exported by the package and never constructed inside it)
LIBRARY = """
import torch
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self, model, loader, accum=4):
        self.model, self.loader = DistributedDataParallel(model), loader
        self.opt = torch.optim.Adam(self.model.parameters())
        self.accum = accum

    def save(self, path):
        torch.save(self.model.state_dict(), path)

    def train(self):
        for step, x in enumerate(self.loader):
            loss = self.model(x) / self.accum
            loss.backward()
            if (step + 1) % self.accum == 0:
                self.opt.step()
                self.opt.zero_grad()
                self.save("last.pt")
"""
C["loop_of_a_library_class_the_project_never_builds"] = (
    A,
    True,
    {
        "lib/__init__.py": "from lib.trainer import Trainer\n",
        "lib/trainer.py": LIBRARY,
        "lib/checkpoint.py": "def keep(trainer):\n    trainer.save('best.pt')\n",
    },
    "lib/trainer.py",
)
# ... and the same loop once a script of the project builds the class and calls only its save
C["NEG_loop_of_a_class_the_project_builds_and_never_trains"] = (
    A,
    False,
    {
        "lib/__init__.py": "from lib.trainer import Trainer\n",
        "lib/trainer.py": LIBRARY,
        "export.py": "from lib import Trainer\n\nif __name__ == '__main__':\n"
        "    Trainer(build_model(), None).save('model.pt')\n",
    },
    "lib/trainer.py",
)
