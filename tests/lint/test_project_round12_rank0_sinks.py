"""Project mode, round 12 of issue #27 (fix12b): rank-0-only sinks reached through classes.

- A base trainer calls ``self.report()`` only on rank 0 and every subclass overrides ``report`` to
  log what its own ``forward_propagation`` accumulated from the loss (UER-py's six
  ``report_and_reset_stats``): each override runs on rank 0 only.
- A logger class of another file builds its writer only where its own flag says logging is on
  (rsl_rl ``self.disable_logs = is_distributed and gpu_global_rank != 0``), and the runner hands it
  the loss dict an algorithm object returns; the algorithm's type is written on the class variable
  it is built from (``alg_class: type[PPO] = resolve_callable(...)``).
- A log method of the file that guards itself is reported once, at its log line, not also at the call;
  a plain print helper called under a rank-0 test is reported once, at the guarded call.
"""

from __future__ import annotations

from pathlib import Path

from ddp_doctor.lint.engine import lint_paths
from tests.lint.project_facts import found
from tests.lint.project_facts import write_files as _write

TRAINER = """
class Trainer:
    def __init__(self, args):
        self.total_loss = 0.0
        self.report_steps = args.report_steps
        self.logger = args.logger

    def forward_propagation(self, batch, model):
        raise NotImplementedError

    def report_and_reset_stats(self):
        raise NotImplementedError

    def train(self, args, global_rank, loader, model, optimizer):
        for step, batch in enumerate(loader):
            loss = self.forward_propagation(batch, model)
            loss.backward()
            optimizer.step()
            model.zero_grad()
            if step % self.report_steps == 0 and GUARD:
                self.report_and_reset_stats()


class MlmTrainer(Trainer):
    def forward_propagation(self, batch, model):
        src, tgt = batch
        loss = model(src, tgt)
        self.total_loss += loss.item()
        return loss

    def report_and_reset_stats(self):
        self.logger.info("loss {:7.2f}".format(self.total_loss / self.report_steps))
        self.total_loss = 0.0


class LmTrainer(Trainer):
    def forward_propagation(self, batch, model):
        loss = model(*batch)
        self.total_loss += loss.item()
        return loss

    def report_and_reset_stats(self):
        self.logger.info("| loss {:3.3f}".format(self.total_loss / self.report_steps))
        self.total_loss = 0.0
"""

PRETRAIN = """
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from uer.trainer import MlmTrainer


def worker(args, global_rank, loader, model, optimizer):
    dist.init_process_group("nccl", rank=global_rank, world_size=args.world_size)
    model = DistributedDataParallel(model)
    MlmTrainer(args).train(args, global_rank, loader, model, optimizer)
"""


def _trainer(tmp_path: Path, guard: str) -> Path:
    return _write(
        tmp_path,
        {
            "uer/__init__.py": "",
            "uer/trainer.py": TRAINER.replace("GUARD", guard),
            "pretrain.py": PRETRAIN,
        },
    )


def test_overrides_of_a_method_the_base_calls_on_rank0_only_log_on_rank0(tmp_path: Path) -> None:
    assert found(_trainer(tmp_path, "global_rank == 0")) == {("rank0-only-loss-log", "uer/trainer.py")}


def test_overrides_called_on_every_rank_are_not_reported(tmp_path: Path) -> None:
    assert found(_trainer(tmp_path, "args.report")) == set()


LOGGER = """
from torch.utils.tensorboard import SummaryWriter


class Logger:
    def __init__(self, log_dir, is_distributed, gpu_global_rank):
        self.log_dir = log_dir
        self.writer = None
        self.disable_logs = FLAG

    def init_logging_writer(self):
        if self.log_dir is not None and not self.disable_logs:
            self.writer = SummaryWriter(log_dir=self.log_dir)
        else:
            self.writer = None

    def log(self, it, loss_dict, learning_rate):
        if self.writer is not None:
            for key, value in loss_dict.items():
                self.writer.add_scalar(f"Loss/{key}", value, it)
            self.writer.add_scalar("Loss/learning_rate", learning_rate, it)
"""

PPO = """
import torch
import torch.distributed as dist


class PPO:
    def __init__(self, policy, optimizer):
        self.policy = policy
        self.optimizer = optimizer

    @staticmethod
    def construct_algorithm(policy, optimizer):
        return PPO(policy, optimizer)

    def update(self, batches):
        mean_loss = 0.0
        for batch in batches:
            loss = self.policy(batch).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            mean_loss += loss.item()
        REDUCE
        return {"surrogate": mean_loss}
"""

RUNNER = """
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from algo.logger import Logger
from algo.ppo import PPO


def resolve_callable(name):
    return globals()[name]


class Runner:
    def __init__(self, cfg, policy, optimizer, log_dir, rank):
        dist.init_process_group("nccl")
        policy = DistributedDataParallel(policy)
        alg_class: type[PPO] = resolve_callable(cfg["class_name"])
        self.alg = alg_class.construct_algorithm(policy, optimizer)
        self.logger = Logger(log_dir, cfg["multi_gpu"], rank)

    def learn(self, batches, iterations):
        self.logger.init_logging_writer()
        for it in range(iterations):
            loss_dict = self.alg.update(batches)
            self.logger.log(it=it, loss_dict=loss_dict, learning_rate=0.001)
"""


def _runner(tmp_path: Path, flag: str, reduce: str = "") -> Path:
    return _write(
        tmp_path,
        {
            "algo/__init__.py": "",
            "algo/logger.py": LOGGER.replace("FLAG", flag),
            "algo/ppo.py": PPO.replace("REDUCE", reduce or "pass"),
            "runner.py": RUNNER,
        },
    )


def test_a_writer_built_behind_a_not_rank0_flag_of_its_class_logs_the_handed_loss(tmp_path: Path) -> None:
    root = _runner(tmp_path, "is_distributed and gpu_global_rank != 0")
    assert found(root) == {("rank0-only-loss-log", "algo/logger.py")}


def test_a_writer_built_behind_a_flag_that_is_no_rank_test_is_every_ranks(tmp_path: Path) -> None:
    assert found(_runner(tmp_path, "log_dir is None")) == set()


def test_the_handed_loss_reduced_by_the_algorithm_is_not_reported(tmp_path: Path) -> None:
    reduce = "mean_loss = torch.tensor(mean_loss)\n        dist.all_reduce(mean_loss)"
    assert found(_runner(tmp_path, "is_distributed and gpu_global_rank != 0", reduce)) == set()


SELF_GUARDED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self, model, optimizer, rank):
        dist.init_process_group("nccl")
        self.model = DistributedDataParallel(model)
        self.optimizer = optimizer
        self.rank = rank

    def process_batch(self, i, batch):
        loss = self.model(batch).mean()
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.log_progress(i, loss)

    def log_progress(self, i, loss):
        if i % 10 == 0 and self.rank == 0:
            print("step %d loss %.4f" % (i, loss.item()))
"""


def test_a_self_guarded_log_method_is_reported_once_at_its_log_line(tmp_path: Path) -> None:
    root = _write(tmp_path, {"train.py": SELF_GUARDED})
    lines = [f.line for f in lint_paths([root]).findings if f.id == "rank0-only-loss-log"]
    text = (root / "train.py").read_text(encoding="utf-8").splitlines()
    assert lines == [next(i for i, t in enumerate(text, 1) if "print(" in t)]


GUARDED_CALL = """
import torch.distributed as dist


def print_step(step, data):
    print(f"step {step}: loss {data:.4f}")


def train(model, loader, optimizer):
    for step, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        optimizer.step()
        loss_item = loss.item()
        if dist.get_rank() == 0:
            print_step(step, loss_item)
"""


def test_a_guarded_call_of_a_plain_print_helper_is_reported_once_at_the_call(tmp_path: Path) -> None:
    # the helper is rank 0's only through its caller: the event is the guarded call
    # (clip_finetune's ``if is_master(): print_step(step, loss_item)``), not the helper's print
    root = _write(tmp_path, {"train.py": GUARDED_CALL})
    lines = [f.line for f in lint_paths([root]).findings if f.id == "rank0-only-loss-log"]
    text = (root / "train.py").read_text(encoding="utf-8").splitlines()
    assert lines == [next(i for i, t in enumerate(text, 1) if "print_step(step, loss_item)" in t)]


SPEAKER_NET = """
import torch
from tqdm import tqdm


class ModelTrainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def train_network(self, loader, verbose):
        loss = 0.0
        counter = 0
        with tqdm(loader, disable=not verbose) as tepoch:
            for data, label in tepoch:
                self.model.zero_grad()
                nloss = self.model(data, label)
                nloss.backward()
                self.optimizer.step()
                loss += nloss.detach().cpu().item()
                counter += 1
                tepoch.set_postfix(loss=loss / counter)
        return loss / counter
"""

TRAIN_SPEAKER = """
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from SpeakerNet import ModelTrainer


def main_worker(gpu, args, model, optimizer, loader):
    dist.init_process_group("nccl", rank=gpu, world_size=args.world_size)
    trainer = ModelTrainer(DistributedDataParallel(model), optimizer)
    for epoch in range(args.epochs):
        trainer.train_network(loader, verbose=VERBOSE)
"""


def _speaker(tmp_path: Path, verbose: str) -> Path:
    return _write(
        tmp_path,
        {"SpeakerNet.py": SPEAKER_NET, "trainSpeakerNet.py": TRAIN_SPEAKER.replace("VERBOSE", verbose)},
    )


def test_a_method_flag_every_project_call_binds_to_a_rank0_test_hides_its_bar_off_rank0(
    tmp_path: Path,
) -> None:
    assert found(_speaker(tmp_path, "(args.gpu == 0)")) == {("rank0-only-loss-log", "SpeakerNet.py")}


def test_a_method_flag_bound_to_the_users_choice_is_every_ranks(tmp_path: Path) -> None:
    assert found(_speaker(tmp_path, "args.verbose")) == set()


BASE_ALGO = """
import torch.distributed as dist


class A2CBase:
    def __init__(self, rank):
        self.global_rank = rank

    def train_actor_critic(self, batch):
        pass

    def train(self, batches):
        a_losses = []
        for batch in batches:
            a_loss, last_lr = self.train_actor_critic(batch)
            a_losses.append(a_loss)
        if self.global_rank == 0:
            print("a_loss", sum(a_losses) / len(a_losses), "lr", last_lr)
"""

AGENT = """
import torch
from torch.nn.parallel import DistributedDataParallel

from algos.base import A2CBase


class A2CAgent(A2CBase):
    def __init__(self, model, optimizer, rank):
        super().__init__(rank)
        self.model = DistributedDataParallel(model)
        self.optimizer = optimizer

    def train_actor_critic(self, batch):
        a_loss = self.model(batch).mean()
        self.optimizer.zero_grad()
        a_loss.backward()
        self.optimizer.step()
        return RESULT, self.optimizer.param_groups[0]["lr"]
"""


def _agent(tmp_path: Path, result: str) -> Path:
    return _write(
        tmp_path,
        {
            "algos/__init__.py": "",
            "algos/base.py": BASE_ALGO,
            "algos/agent.py": AGENT.replace("RESULT", result),
        },
    )


def test_a_method_the_base_only_declares_returns_what_the_subclasses_of_other_files_return(
    tmp_path: Path,
) -> None:
    assert found(_agent(tmp_path, "a_loss.item()")) == {("rank0-only-loss-log", "algos/base.py")}


def test_subclasses_returning_no_loss_make_the_declared_method_no_loss(tmp_path: Path) -> None:
    assert found(_agent(tmp_path, "len(batch)")) == set()


TTS_BASE = """
import torch.distributed as dist


class TTSTrainer:
    def __init__(self, accelerator):
        self.accelerator = accelerator

    def _train_step(self, batch):
        pass

    def _train_epoch(self, loader):
        total = 0.0
        for batch in loader:
            loss = self._train_step(batch)
            total += loss
            self.accelerator.print("step loss", loss)
        return total

    def train_loop(self, loader, epochs):
        for epoch in range(epochs):
            train_loss = self._train_epoch(loader)
            if self.accelerator.is_main_process:
                print("epoch", epoch, "train loss", train_loss)
"""

TTS_CHILD = """
from torch.nn.parallel import DistributedDataParallel

from tts.base import TTSTrainer


class FastSpeechTrainer(TTSTrainer):
    def __init__(self, accelerator, model, optimizer):
        super().__init__(accelerator)
        self.model = DistributedDataParallel(model)
        self.optimizer = optimizer

    def _train_step(self, batch):
        loss = self.model(batch).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()
OVERRIDE
"""

OWN_EPOCH = """
    def _train_epoch(self, loader):
        total = 0.0
        for batch in loader:
            total += self._train_step(batch)
        return total
"""


def _tts(tmp_path: Path, override: bool) -> list[int]:
    root = _write(
        tmp_path,
        {
            "tts/__init__.py": "",
            "tts/base.py": TTS_BASE,
            "tts/fastspeech.py": TTS_CHILD.replace("OVERRIDE", OWN_EPOCH if override else ""),
        },
    )
    return sorted(
        f.line
        for f in lint_paths([root]).findings
        if f.id == "rank0-only-loss-log" and Path(f.path or "").name == "base.py"
    )


def test_a_base_method_every_subclass_overrides_logs_nothing_of_the_run(tmp_path: Path) -> None:
    # the base's per-step print never runs (every subclass has its own ``_train_epoch``); the epoch
    # print of ``train_loop``, which they inherit, does
    lines = _tts(tmp_path, override=True)
    assert len(lines) == 1
    assert TTS_BASE.splitlines()[lines[0] - 1].strip().startswith('print("epoch"')


def test_a_base_method_a_subclass_inherits_logs_on_rank0(tmp_path: Path) -> None:
    assert len(_tts(tmp_path, override=False)) == 2
