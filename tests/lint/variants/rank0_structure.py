from tests.lint.variants.set_epoch import TUTORIAL_TRAIN_MODEL

HEAD = """
import os
import logging
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.tensorboard import SummaryWriter
import wandb
from tqdm import tqdm
logger = logging.getLogger(__name__)
"""
SETUP = """
def main(args, loader, net):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DDP(net.cuda(), device_ids=[local_rank])
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
"""
STEP = """            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def one(body, extra=""):
    return {"train.py": HEAD + extra + SETUP + body}


R = "rank0-only-loss-log"
C = {}
C["writer_rank0_built"] = (
    R,
    True,
    one(
        """
    writer = SummaryWriter() if rank == 0 else None
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            if writer is not None:
                writer.add_scalar("loss", loss.item(), step)
"""
    ),
    "train.py",
)
C["writer_truthy"] = (
    R,
    True,
    one(
        """
    writer = None
    if rank == 0:
        writer = SummaryWriter()
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            if writer:
                writer.add_scalar("loss", loss.item(), step)
"""
    ),
    "train.py",
)
C["wandb_init_rank0"] = (
    R,
    True,
    one(
        """
    if rank == 0:
        wandb.init(project="x")
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            if rank == 0:
                wandb.log({"loss": loss.item()})
"""
    ),
    "train.py",
)
C["tqdm_disabled"] = (
    R,
    True,
    one(
        """
    for epoch in range(args.epochs):
        pbar = tqdm(loader, disable=rank != 0)
        for step, (x, y) in enumerate(pbar):
"""
        + STEP
        + """            pbar.set_postfix(loss=loss.item())
"""
    ),
    "train.py",
)
C["logger_silenced"] = (
    R,
    True,
    one(
        """
    logging.basicConfig(level=logging.INFO if rank == 0 else logging.WARN)
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            logger.info("loss %.4f", loss.item())
"""
    ),
    "train.py",
)
C["early_return"] = (
    R,
    True,
    one(
        """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """        log_epoch(rank, epoch, loss)


def log_epoch(rank, epoch, loss):
    if rank != 0:
        return
    print(f"epoch {epoch} loss {loss.item():.4f}")
"""
    ),
    "train.py",
)
C["log_helper"] = (
    R,
    True,
    one(
        """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            if rank == 0:
                log_metrics(step, loss.item())


def log_metrics(step, value):
    print(f"step {step}: loss {value:.4f}")
"""
    ),
    "train.py",
)
C["step_returns_tuple"] = (
    R,
    True,
    {
        "train.py": HEAD
        + """
class Trainer:
    def __init__(self, net):
        dist.init_process_group("nccl")
        self.rank = dist.get_rank()
        self.model = DDP(net.cuda())
        self.optimizer = torch.optim.AdamW(self.model.parameters())

    def step(self, batch):
        x, y = batch
        logits = self.model(x)
        loss = nn.functional.cross_entropy(logits, y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss, logits

    def train(self, loader, epochs):
        for epoch in range(epochs):
            for i, batch in enumerate(loader):
                loss, _ = self.step(batch)
                if self.rank == 0 and i % 10 == 0:
                    print(f"epoch {epoch} it {i} loss {loss.item():.4f}")
"""
    },
    "train.py",
)
C["step_returns_float"] = (
    R,
    True,
    {
        "train.py": HEAD
        + """
class Trainer:
    def __init__(self, net):
        dist.init_process_group("nccl")
        self.is_master = dist.get_rank() == 0
        self.model = DDP(net.cuda())
        self.optimizer = torch.optim.AdamW(self.model.parameters())

    def training_step(self, batch):
        x, y = batch
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def train(self, loader, epochs):
        for epoch in range(epochs):
            total = 0.0
            for i, batch in enumerate(loader):
                total += self.training_step(batch)
            if self.is_master:
                logger.info("epoch %d train loss %.4f", epoch, total / len(loader))
"""
    },
    "train.py",
)
C["engine_other_file"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from engine import train_one_epoch\n"
        + SETUP
        + """
    for epoch in range(args.epochs):
        avg = train_one_epoch(model, loader, optimizer, criterion)
        if rank == 0:
            print(f"epoch {epoch} train_loss {avg:.4f}")
""",
        "engine.py": "import torch\n"
        + """
def train_one_epoch(model, loader, optimizer, criterion):
    total = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)
""",
    },
    "train.py",
)
C["dict_returned"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from engine import train_one_epoch\n"
        + SETUP
        + """
    for epoch in range(args.epochs):
        stats = train_one_epoch(model, loader, optimizer, criterion)
        if rank == 0:
            wandb.log(stats)
""",
        "engine.py": "import torch\n"
        + """
def train_one_epoch(model, loader, optimizer, criterion):
    total = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return {"train_loss": total / len(loader)}
""",
    },
    "train.py",
)
C["NEG_all_reduce"] = (
    R,
    False,
    one(
        """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            reduced = loss.detach().clone()
            dist.all_reduce(reduced)
            reduced /= dist.get_world_size()
            if rank == 0:
                print(f"loss {reduced.item():.4f}")
"""
    ),
    "train.py",
)
C["NEG_reduced_in_a_loop_over_a_list"] = (
    R,
    False,
    one(
        """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            aux = loss.detach() * 0.5
            for t in [loss, aux]:
                dist.all_reduce(t)
                t.div_(dist.get_world_size())
            if rank == 0:
                print(f"loss {loss.item():.4f} aux {aux.item():.4f}")
"""
    ),
    "train.py",
)
C["NEG_nested_evaluate_binds_its_own_loss"] = (
    R,
    False,
    one(
        """
    def evaluate(step):
        model.eval()
        for x, y in loader:
            loss = criterion(model(x), y)
            if rank == 0:
                print(f"step {step} val loss {loss.item():.4f}")
        model.train()

    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """        evaluate(epoch)
"""
    ),
    "train.py",
)
C["nested_logger_reads_the_training_loss"] = (
    R,
    True,
    one(
        """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """
            def log_stats():
                if rank == 0:
                    print(f"loss {loss.item():.4f}")

            log_stats()
"""
    ),
    "train.py",
)
C["rank_zero_only_function"] = (
    R,
    True,
    one(
        """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            log_loss(step, loss.item())
""",
        extra="""
from pytorch_lightning.utilities import rank_zero_only


@rank_zero_only
def log_loss(step, value):
    print(f"step {step} loss {value:.4f}")
""",
    ),
    "train.py",
)
C["NEG_rank_zero_only_of_a_reduced_loss"] = (
    R,
    False,
    {
        "train.py": C["rank_zero_only_function"][2]["train.py"].replace(
            "            log_loss(step, loss.item())\n",
            "            shown = loss.detach().clone()\n"
            "            dist.all_reduce(shown)\n"
            "            log_loss(step, shown.item() / dist.get_world_size())\n",
        )
    },
    "train.py",
)
C["NEG_reduce_helper"] = (
    R,
    False,
    one(
        """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            avg = reduce_mean(loss)
            if rank == 0:
                print(f"loss {avg.item():.4f}")


def reduce_mean(t):
    t = t.detach().clone()
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t / dist.get_world_size()
"""
    ),
    "train.py",
)
C["NEG_acc_metric"] = (
    R,
    False,
    one(
        """
    for epoch in range(args.epochs):
        correct = 0
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            correct += (model(x).argmax(1) == y).sum().item()
        if rank == 0:
            print(f"train acc {correct / 100:.3f}")
"""
    ),
    "train.py",
)
C["NEG_all_ranks"] = (
    R,
    False,
    one(
        """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            print(f"rank {rank} loss {loss.item():.4f}")
"""
    ),
    "train.py",
)
C["NEG_val_loss"] = (
    R,
    False,
    one(
        """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """        model.eval()
        with torch.no_grad():
            val_loss = sum(criterion(model(x), y).item() for x, y in loader)
        if rank == 0:
            print(f"val loss {val_loss:.4f}")
"""
    ),
    "train.py",
)
C["NEG_reduce_then_divide"] = (
    R,
    False,
    one(
        """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            shown = reduce_sum(loss.detach()) / dist.get_world_size()
            if rank == 0:
                print(f"loss {shown.item():.4f}")


def reduce_sum(t):
    dist.all_reduce(t)
    return t
"""
    ),
    "train.py",
)
C["tutorial_phase_loop"] = (R, True, {"train.py": TUTORIAL_TRAIN_MODEL}, "train.py")
C["NEG_tutorial_phase_loop_reduced"] = (
    R,
    False,
    {
        "train.py": TUTORIAL_TRAIN_MODEL.replace(
            "            epoch_loss = running_loss / dataset_sizes[phase]\n",
            "            total = torch.tensor(running_loss)\n"
            "            dist.all_reduce(total)\n"
            "            epoch_loss = total.item() / dataset_sizes[phase]\n",
        )
    },
    "train.py",
)
C["running_sum_of_step"] = (
    R,
    True,
    {
        "train.py": C["step_returns_float"][2]["train.py"]
        .replace("total += self.training_step(batch)", "total = total + self.training_step(batch) * x_weight")
        .replace("total = 0.0", "total = 0.0\n            x_weight = 1.0")
    },
    "train.py",
)
C["NEG_running_sum_of_eval_step"] = (
    R,
    False,
    {
        "train.py": C["running_sum_of_step"][2]["train.py"]
        .replace("self.training_step(batch) * x_weight", "self.eval_step(batch) * x_weight")
        .replace(
            "    def train(self, loader, epochs):",
            """    @torch.no_grad()
    def eval_step(self, batch):
        x, y = batch
        return nn.functional.cross_entropy(self.model(x), y).item()

    def train(self, loader, epochs):""",
        )
    },
    "train.py",
)
C["running_sum_of_step_weighted"] = (
    R,
    True,
    {
        "train.py": C["step_returns_float"][2]["train.py"]
        .replace("total += self.training_step(batch)", "total += self.training_step(batch) * x_weight")
        .replace("total = 0.0", "total = 0.0\n            x_weight = 1.0")
    },
    "train.py",
)
C["no_grad_log_block"] = (
    R,
    True,
    one(
        """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x)
            raw = criterion(out, y)
            with torch.no_grad():
                shown = raw.detach().sqrt()
            optimizer.zero_grad()
            raw.backward()
            optimizer.step()
            if rank == 0:
                print(f"loss {shown.item():.4f}")
"""
    ),
    "train.py",
)
C["NEG_no_grad_ema_forward"] = (
    R,
    False,
    one(
        """
    ema = torch.optim.swa_utils.AveragedModel(model)
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            with torch.no_grad():
                ema_loss = criterion(ema(x), y)
            if rank == 0:
                print(f"ema loss {ema_loss.item():.4f}")
"""
    ),
    "train.py",
)
C["NEG_nested_reduce_helper_divided"] = (
    R,
    False,
    one(
        """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x)
            if dist.is_initialized():
                def reduce_tensor(inp):
                    with torch.no_grad():
                        dist.reduce(inp, dst=0)
                    return inp
                loss = criterion(out, y)
                shown = reduce_tensor(loss) / dist.get_world_size()
            else:
                loss = shown = criterion(out, y)
            meter.update(shown.item())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if rank == 0:
                print(f"loss {meter.avg:.4f}")
"""
    ),
    "train.py",
)
C["NEG_meters_reduced_by_key"] = (
    R,
    False,
    one(
        """
    meters = {"loss": Meter()}
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            meters["loss"].update(loss.item())
        for name in list(meters.keys()):
            meters[name].all_reduce()
        if rank == 0:
            print(f"epoch loss {meters['loss'].avg:.4f}")


class Meter:
    def __init__(self):
        self.sum, self.count, self.avg = 0.0, 0, 0.0

    def update(self, v):
        self.sum += v
        self.count += 1

    def all_reduce(self):
        t = torch.tensor([self.sum, self.count])
        dist.all_reduce(t)
        self.sum, self.count = t.tolist()
        self.avg = self.sum / self.count
"""
    ),
    "train.py",
)
C["NEG_items_of_two_dicts_reduced"] = (
    R,
    False,
    one(
        """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            loss_dict = {"loss": loss.detach()}
            metric_dict = {"n": torch.tensor(1.0)}
            for key, value in list(loss_dict.items()) + list(metric_dict.items()):
                dist.reduce(value, dst=0)
                if rank == 0:
                    wandb.log({key: (value / dist.get_world_size()).item()})
"""
    ),
    "train.py",
)
C["guard_device_id_of_the_wrap"] = (
    R,
    True,
    {
        "train.py": HEAD
        + """
def main(args, loader, net, rank):
    dist.init_process_group("nccl")
    device_id = rank % torch.cuda.device_count()
    model = DDP(net.to(device_id), device_ids=[device_id])
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            if device_id == 0:
                print(f"loss {loss.item():.4f}")
"""
    },
    "train.py",
)

# Round 22: a rank-0 flag handed to a function of an imported project module (NAIRR's
# ``distributed_train.train(local_rank, global_rank, world_size, is_logger, params)``), called beside
# ``model.train()`` elsewhere: the call is the module's function, not any ``.train()``.
FLAG_ENGINE = """
import torch
from tqdm import tqdm


def train(model, loader, optimizer, criterion, is_logger):
    model.train()
    for epoch in range(10):
        pbar = tqdm(loader)
        for x, y in pbar:
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if is_logger:
                pbar.set_postfix(loss=loss.item())
"""
FLAG_MAIN = (
    HEAD
    + "import engine\n"
    + SETUP
    + """
    is_logger = rank == 0
    engine.train(model, loader, optimizer, criterion, is_logger)
"""
)
C["flag_handed_to_a_module_function"] = (
    R,
    True,
    {"train.py": FLAG_MAIN, "engine.py": FLAG_ENGINE},
    "engine.py",
)
C["NEG_flag_handed_to_a_module_function_not_rank0"] = (
    R,
    False,
    {
        "train.py": FLAG_MAIN.replace("is_logger = rank == 0", "is_logger = args.verbose"),
        "engine.py": FLAG_ENGINE,
    },
    "engine.py",
)
C["NEG_flag_handed_by_one_call_only"] = (
    R,
    False,
    {
        "train.py": FLAG_MAIN + "    engine.train(model, loader, optimizer, criterion, True)\n",
        "engine.py": FLAG_ENGINE,
    },
    "engine.py",
)

# Round 22: loggers whose class makes them rank 0's: a wrapper forwarding every call on rank 0 only
# (physicsnemo's ``RankZeroLoggingWrapper``), a logger whose log methods are ``@rank_zero_only``
# (pytorch_trainer's ``CSVLogger``), in another file of the project.
RANK0_WRAPPER = """
class RankZeroLoggingWrapper:
    def __init__(self, obj, dist):
        self.obj = obj
        self.dist = dist

    def __getattr__(self, name):
        attr = getattr(self.obj, name)
        if callable(attr):
            def wrapper(*args, **kwargs):
                if self.dist.rank == 0:
                    return attr(*args, **kwargs)
                else:
                    return None
            return wrapper
        return attr
"""
RANK0_DECORATED_LOGGER = """
from utils.distributed import rank_zero_only


class CSVLogger:
    def __init__(self, root):
        self.root = root
        self.rows = []

    @rank_zero_only
    def log(self, name, value):
        self.rows.append((name, value))

    def flush(self):
        pass
"""
LOGGED_BY = """
    for epoch in range(args.epochs):
        for x, y in loader:
"""
C["rank0_wrapper_class_other_file"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from utils.logging import RankZeroLoggingWrapper\n"
        + SETUP
        + "    rank_zero_logger = RankZeroLoggingWrapper(logger, dist)\n"
        + LOGGED_BY
        + STEP
        + '            rank_zero_logger.info(f"loss {loss.item():.4f}")\n',
        "utils/__init__.py": "",
        "utils/logging.py": RANK0_WRAPPER,
    },
    "train.py",
)
C["NEG_wrapper_class_every_rank"] = (
    R,
    False,
    {
        "train.py": HEAD
        + "from utils.logging import RankZeroLoggingWrapper\n"
        + SETUP
        + "    rank_zero_logger = RankZeroLoggingWrapper(logger, dist)\n"
        + LOGGED_BY
        + STEP
        + '            rank_zero_logger.info(f"loss {loss.item():.4f}")\n',
        "utils/__init__.py": "",
        "utils/logging.py": RANK0_WRAPPER.replace("if self.dist.rank == 0:", "if self.dist.world_size > 0:"),
    },
    "train.py",
)
C["rank0_decorated_logger_class_other_file"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from utils.loggers import CSVLogger\n"
        + SETUP
        + '    csv_logger = CSVLogger("logs")\n'
        + LOGGED_BY
        + STEP
        + '            csv_logger.log("loss", loss.item())\n',
        "utils/__init__.py": "",
        "utils/distributed.py": "def rank_zero_only(fn):\n    return fn\n",
        "utils/loggers.py": RANK0_DECORATED_LOGGER,
    },
    "train.py",
)
C["NEG_decorated_logger_reduced_loss"] = (
    R,
    False,
    {
        "train.py": HEAD
        + "from utils.loggers import CSVLogger\n"
        + SETUP
        + '    csv_logger = CSVLogger("logs")\n'
        + LOGGED_BY
        + STEP
        + "            dist.all_reduce(loss)\n"
        + '            csv_logger.log("loss", loss.item() / dist.get_world_size())\n',
        "utils/__init__.py": "",
        "utils/distributed.py": "def rank_zero_only(fn):\n    return fn\n",
        "utils/loggers.py": RANK0_DECORATED_LOGGER,
    },
    "train.py",
)
C["rank0_wrapper_of_an_installed_package"] = (
    R,
    True,
    one(
        "    rank_zero_logger = RankZeroLoggingWrapper(logger, dist)\n"
        + LOGGED_BY
        + STEP
        + '            rank_zero_logger.info(f"loss {loss.item():.4f}")\n',
        "from physicsnemo.utils.logging import RankZeroLoggingWrapper\n",
    ),
    "train.py",
)
C["NEG_project_class_named_rank_zero_logs_everywhere"] = (
    R,
    False,
    {
        "train.py": HEAD
        + "from utils.logging import RankZeroLoggingWrapper\n"
        + SETUP
        + "    rank_zero_logger = RankZeroLoggingWrapper(logger, dist)\n"
        + LOGGED_BY
        + STEP
        + '            rank_zero_logger.info(f"loss {loss.item():.4f}")\n',
        "utils/__init__.py": "",
        "utils/logging.py": "class RankZeroLoggingWrapper:\n    def __init__(self, obj, dist):\n        self.obj = obj\n\n"
        "    def info(self, msg):\n        self.obj.info(msg)\n",
    },
    "train.py",
)

# Round 22: writers built on rank 0 only (None elsewhere) handed to an engine class of another file,
# which tests them before logging (ImbalancedSSL's ``TrainEngine(..., logger=train_logger)`` then ``if
# self.logger: self.logger.info(...)``).
ENGINE_CLASS = """
class TrainEngine:
    def __init__(self, model, loader, optimizer, criterion, logger=None, log_writer=None):
        self.model = model
        self.loader = loader
        self.optimizer = optimizer
        self.criterion = criterion
        self.logger = logger
        self.log_writer = log_writer

    def train_one_epoch(self, epoch):
        for step, (x, y) in enumerate(self.loader):
            loss = self.criterion(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if self.logger and step % 10 == 0:
                self.logger.info(f"epoch {epoch} step {step} loss {loss.item():.4f}")
"""
ENGINE_MAIN = (
    HEAD
    + "from engine import TrainEngine\nfrom utils import create_logger, is_main_process\n"
    + SETUP
    + """
    if is_main_process():
        log_writer, train_logger = create_logger(args)
    else:
        log_writer, train_logger = None, None
    engine = TrainEngine(model, loader, optimizer, criterion, logger=train_logger, log_writer=log_writer)
    for epoch in range(args.epochs):
        engine.train_one_epoch(epoch)
"""
)
ENGINE_UTILS = """
import logging
import torch.distributed as dist
from torch.utils.tensorboard import SummaryWriter


def is_main_process():
    return dist.get_rank() == 0


def create_logger(args):
    return SummaryWriter(args.out), logging.getLogger("train")
"""
C["rank0_loggers_unpacked_handed_to_engine_class"] = (
    R,
    True,
    {"train.py": ENGINE_MAIN, "engine.py": ENGINE_CLASS, "utils.py": ENGINE_UTILS},
    "engine.py",
)
C["NEG_loggers_on_every_rank_handed_to_engine_class"] = (
    R,
    False,
    {
        "train.py": ENGINE_MAIN.replace(
            "    if is_main_process():\n        log_writer, train_logger = create_logger(args)\n"
            "    else:\n        log_writer, train_logger = None, None\n",
            "    log_writer, train_logger = create_logger(args)\n",
        ),
        "engine.py": ENGINE_CLASS,
        "utils.py": ENGINE_UTILS,
    },
    "engine.py",
)

# Round 22: a logger object called as a function (MM_SLT's ``main_logger(f"... Loss: {total_loss}")``,
# a ``Logger`` with ``__call__``) under a rank-0 test; a factory call beside it is no log.
CALLED_LOGGER = """
class Logger:
    def __init__(self, path):
        self.path = path

    def __call__(self, msg):
        print(msg)
        with open(self.path, "a") as f:
            f.write(msg + "\\n")
"""
C["called_logger_object"] = (
    R,
    True,
    one(
        '    main_logger = Logger("log.txt") if rank == 0 else None\n'
        + "    for epoch in range(args.epochs):\n        total_loss = 0.0\n        for x, y in loader:\n"
        + STEP
        + "            total_loss += loss.item()\n"
        + '        if rank == 0:\n            main_logger(f"epoch {epoch} loss {total_loss / len(loader):.4f}")\n',
        CALLED_LOGGER,
    ),
    "train.py",
)
C["NEG_logger_factory_called_with_the_loss_dir"] = (
    R,
    False,
    one(
        "    for epoch in range(args.epochs):\n        total_loss = 0.0\n        for x, y in loader:\n"
        + STEP
        + "            total_loss += loss.item()\n"
        + "        if rank == 0:\n            setup_logger(total_loss)\n",
        "\ndef setup_logger(level):\n    return logging.getLogger(str(level))\n",
    ),
    "train.py",
)

# Round 22: a factory of another file that hands the other ranks a writer doing nothing (CenterNet's
# ``create_summary(local_rank, ...)`` returning ``EmptySummaryWriter`` when ``distributed_rank > 0``; tape's
# ``visualization.get`` returning a ``DummyVisualizer``).
NULL_FACTORY = """
from torch.utils.tensorboard import SummaryWriter


class EmptySummaryWriter:
    def __init__(self, **kwargs):
        pass

    def add_scalar(self, tag, value, step):
        pass

    def close(self):
        pass


def create_summary(distributed_rank=0, **kwargs):
    if distributed_rank > 0:
        return EmptySummaryWriter(**kwargs)
    else:
        return SummaryWriter(**kwargs)
"""
NULL_MAIN = (
    HEAD
    + "from utils.summary import create_summary\n"
    + SETUP
    + "    summary_writer = create_summary(local_rank, log_dir=args.log_dir)\n"
    + """    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
    + STEP
    + '            summary_writer.add_scalar("loss", loss.item(), step)\n'
)
C["null_writer_off_rank0_from_a_factory"] = (
    R,
    True,
    {"train.py": NULL_MAIN, "utils/__init__.py": "", "utils/summary.py": NULL_FACTORY},
    "train.py",
)
C["NEG_factory_writer_on_every_rank"] = (
    R,
    False,
    {
        "train.py": NULL_MAIN,
        "utils/__init__.py": "",
        "utils/summary.py": NULL_FACTORY.replace(
            "    def add_scalar(self, tag, value, step):\n        pass\n",
            "    def add_scalar(self, tag, value, step):\n        print(tag, value, step)\n",
        ),
    },
    "train.py",
)
C["NEG_factory_null_writer_when_disabled"] = (
    R,
    False,
    {
        "train.py": NULL_MAIN.replace("create_summary(local_rank,", "create_summary(args.no_log,"),
        "utils/__init__.py": "",
        "utils/summary.py": NULL_FACTORY.replace("distributed_rank=0", "disabled=False").replace(
            "if distributed_rank > 0:", "if disabled:"
        ),
    },
    "train.py",
)

# Round 22: ``print = logger.info`` (CenterNet) with a logger whose setup adds no handler off rank 0:
# every later ``print(...)`` is a record the other ranks drop.
QUIET_SETUP = """
import logging
import sys


def create_logger(distributed_rank=0, save_dir=None):
    logger = logging.getLogger("logger")
    logger.setLevel(logging.DEBUG)
    if distributed_rank > 0:
        return logger
    ch = logging.StreamHandler(stream=sys.stdout)
    logger.addHandler(ch)
    return logger
"""
PRINT_REBOUND = (
    HEAD
    + "from utils.summary import create_logger\n"
    + SETUP
    + "    logger = create_logger(rank)\n    print = logger.info\n"
    + LOGGED_BY
    + STEP
    + '            print("epoch %d loss %.4f" % (epoch, loss.item()))\n'
)
C["print_rebound_to_a_quiet_logger"] = (
    R,
    True,
    {"train.py": PRINT_REBOUND, "utils/__init__.py": "", "utils/summary.py": QUIET_SETUP},
    "train.py",
)
C["NEG_print_rebound_to_a_logger_on_every_rank"] = (
    R,
    False,
    {
        "train.py": PRINT_REBOUND,
        "utils/__init__.py": "",
        "utils/summary.py": QUIET_SETUP.replace("    if distributed_rank > 0:\n        return logger\n", ""),
    },
    "train.py",
)

# After round 22's end scoring (tuned on holdout-22): a reduce helper that returns its input early when
# one process runs (``if world_size < 2: return inp``, Classification_Lorenzo's ``reduce_tensor``) still
# reduces wherever training is distributed.
REDUCE_EARLY_RETURN = """
def reduce_tensor(inp):
    world_size = float(dist.get_world_size())
    if world_size < 2:
        return inp
    with torch.no_grad():
        reduce_inp = inp
        dist.reduce(reduce_inp, dst=0)
    return reduce_inp / world_size
"""
C["NEG_reduce_helper_early_return_single_process"] = (
    R,
    False,
    one(
        LOGGED_BY
        + STEP
        + "            reduced = reduce_tensor(loss)\n"
        + '            if rank == 0:\n                print(f"loss {reduced.item():.4f}")\n',
        REDUCE_EARLY_RETURN,
    ),
    "train.py",
)
C["reduce_helper_early_return_not_single_process"] = (
    R,
    True,
    one(
        LOGGED_BY
        + STEP
        + "            reduced = reduce_tensor(loss)\n"
        + '            if rank == 0:\n                print(f"loss {reduced.item():.4f}")\n',
        REDUCE_EARLY_RETURN.replace("if world_size < 2:", "if world_size < 8:"),
    ),
    "train.py",
)

# After round 22's end scoring (tuned on holdout-22): a logging setup that appends its stream handlers
# on every rank (``logger.handlers.append``) and adds a file handler on rank 0 only silences nothing
# (lingua's ``init_logger``).
EVERY_RANK_SETUP = """
import logging
import sys
import torch.distributed as dist


def init_logger(log_file=None):
    logger = logging.getLogger()
    logger.setLevel(logging.INFO)
    logger.handlers.clear()
    logger.handlers.append(logging.StreamHandler(sys.stdout))
    if log_file is not None and dist.get_rank() == 0:
        logger.addHandler(logging.FileHandler(log_file, "a"))
"""
EVERY_RANK_MAIN = (
    HEAD
    + "from utils.log import init_logger\n"
    + SETUP
    + '    init_logger("train.log")\n'
    + LOGGED_BY
    + STEP
    + '            logger.info(f"loss {loss.item():.4f}")\n'
)
C["NEG_handlers_appended_on_every_rank"] = (
    R,
    False,
    {"train.py": EVERY_RANK_MAIN, "utils/__init__.py": "", "utils/log.py": EVERY_RANK_SETUP},
    "train.py",
)
C["handlers_appended_on_rank0_only"] = (
    R,
    True,
    {
        "train.py": EVERY_RANK_MAIN,
        "utils/__init__.py": "",
        "utils/log.py": EVERY_RANK_SETUP.replace(
            "    logger.handlers.append(logging.StreamHandler(sys.stdout))\n",
            "    if dist.get_rank() == 0:\n        logger.handlers.append(logging.StreamHandler(sys.stdout))\n",
        ),
    },
    "train.py",
)

# A class with a rank-0 ``print`` beside methods every rank runs (OpenRLHF's ``DeepspeedStrategy``) is no
# writer: ``strategy.backward(loss, ...)`` is no log.
STRATEGY = """
import torch.distributed as dist


class Strategy:
    def backward(self, loss, model, optimizer):
        loss.backward()

    def print(self, *msg):
        if dist.get_rank() == 0:
            print(*msg)
"""
C["NEG_strategy_with_a_rank0_print_is_no_writer"] = (
    R,
    False,
    {
        "train.py": HEAD
        + "from utils.strategy import Strategy\n"
        + SETUP
        + "    strategy = Strategy()\n"
        + LOGGED_BY
        + "            loss = criterion(model(x), y)\n            optimizer.zero_grad()\n"
        + "            strategy.backward(loss, model, optimizer)\n            optimizer.step()\n",
        "utils/__init__.py": "",
        "utils/strategy.py": STRATEGY,
    },
    "train.py",
)

# Every item of a dict replaced by a synced meter's update, which all-reduces and returns the global
# value (jukebox's ``for key, val in _metrics.items(): _metrics[key] = metrics.update(key, val, n)``),
# before a rank-0 writer logs it.
SYNCED_METRICS = """
import torch
import torch.distributed as dist
from torch.utils.tensorboard import SummaryWriter


class Metrics:
    def __init__(self):
        self.sum = {}

    def update(self, tag, val, batch):
        total = torch.tensor(val * batch).float()
        n = torch.tensor(batch).float()
        dist.all_reduce(total)
        dist.all_reduce(n)
        self.sum[tag] = self.sum.get(tag, 0.0) + total.item()
        return total.item() / n.item()


class Logger:
    def __init__(self, rank):
        if rank == 0:
            self.sw = SummaryWriter("logs")
        self.rank = rank

    def add_scalar(self, tag, val):
        if self.rank == 0:
            self.sw.add_scalar(tag, val)
"""
C["NEG_dict_items_replaced_by_a_synced_meter"] = (
    R,
    False,
    {
        "train.py": HEAD
        + "from utils.log import Logger, Metrics\n"
        + SETUP
        + "    logger = Logger(rank)\n    metrics = Metrics()\n"
        + LOGGED_BY
        + STEP
        + '            _metrics = {"loss": loss.item()}\n'
        + "            for key, val in _metrics.items():\n"
        + "                _metrics[key] = metrics.update(key, val, x.shape[0])\n"
        + "                logger.add_scalar(key, _metrics[key])\n",
        "utils/__init__.py": "",
        "utils/log.py": SYNCED_METRICS,
    },
    "train.py",
)
C["dict_items_logged_raw_by_a_rank0_logger_class"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from utils.log import Logger, Metrics\n"
        + SETUP
        + "    logger = Logger(rank)\n    metrics = Metrics()\n"
        + LOGGED_BY
        + STEP
        + '            _metrics = {"loss": loss.item()}\n'
        + "            for key, val in _metrics.items():\n"
        + "                logger.add_scalar(key, _metrics[key])\n",
        "utils/__init__.py": "",
        "utils/log.py": SYNCED_METRICS,
    },
    "train.py",
)
# tqdm's ``write`` is a class method: it prints on every rank, whether the bar it is called on is
# hidden off rank 0 or not (distil-whisper's ``steps_trained_progress_bar.write(...)``)
C["NEG_tqdm_write_of_a_bar_hidden_off_rank0"] = (
    R,
    False,
    one(
        """
    pbar = tqdm(range(args.steps), disable=rank != 0)
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            pbar.update(1)
            pbar.write(f"step {step} loss {loss.item():.4f}")
"""
    ),
    "train.py",
)
C["tqdm_write_under_a_rank0_test"] = (
    R,
    True,
    one(
        """
    pbar = tqdm(range(args.steps), disable=rank != 0)
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            pbar.update(1)
            if rank == 0:
                pbar.write(f"step {step} loss {loss.item():.4f}")
"""
    ),
    "train.py",
)
# the other branch of a rank-0 test runs on the other ranks, where the rank-0 writer is None: its
# ``elif writer is not None:`` logs nothing in a distributed run (CenterNet tutorial's train.py)
ELSE_OF_RANK0 = """
    writer = SummaryWriter() if rank == 0 else None
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
C["NEG_rank0_writer_in_the_else_of_a_rank0_test"] = (
    R,
    False,
    one(
        ELSE_OF_RANK0
        + STEP
        + """            if rank == 0:
                reduced = loss.detach().clone()
                dist.all_reduce(reduced)
                writer.add_scalar("loss", reduced.item() / dist.get_world_size(), step)
            elif writer is not None:
                writer.add_scalar("loss", loss.item(), step)
"""
    ),
    "train.py",
)
C["rank0_writer_beside_a_rank0_test"] = (
    R,
    True,
    one(
        ELSE_OF_RANK0
        + STEP
        + """            if rank == 0:
                print("step", step)
            if writer is not None:
                writer.add_scalar("loss", loss.item(), step)
"""
    ),
    "train.py",
)
# ``total /= n`` after a loop combines with what the name held, it does not rebind it: the sum the
# validation loop built is still a validation value (DS-Net's ``tracking_loss``)
AVERAGED = """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
C["NEG_validation_sum_divided_after_its_loop"] = (
    R,
    False,
    one(
        AVERAGED
        + STEP
        + """        total = 0.0
        for x, y in args.val_loader:
            with torch.no_grad():
                loss = criterion(model(x), y)
            total += loss.item()
        total /= len(args.val_loader)
        if rank == 0:
            print(f"epoch {epoch} held-out loss {total:.4f}")
"""
    ),
    "train.py",
)
C["training_sum_divided_after_its_loop"] = (
    R,
    True,
    one(
        """
    for epoch in range(args.epochs):
        total = 0.0
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            total += loss.item()
        total /= len(loader)
        if rank == 0:
            print(f"epoch {epoch} loss {total:.4f}")
"""
    ),
    "train.py",
)
# a helper of another file that appends what it is handed to a log file (``open(path, "a")``) logs
# it: the rank-0 call handing it the local loss is the event (UIA's ``write_train_logs``)
APPEND_LOG = """
import logging
import os

logger = logging.getLogger(__name__)


def write_train_logs(epoch, step, loss_val, filename):
    if not os.path.exists(filename):
        with open(filename, "w") as f:
            f.write("epoch\\tstep\\tloss\\n")
    else:
        with open(filename, "a") as f:
            f.write(f"{epoch}\\t{step}\\t{loss_val:.3f}\\n")
"""
C["rank0_call_of_an_appending_log_helper_of_another_file"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from utils.logs import write_train_logs\n"
        + SETUP
        + LOGGED_BY
        + STEP
        + "            if rank == 0:\n"
        + '                write_train_logs(epoch, 0, loss.item(), "train_logs.tsv")\n',
        "utils/__init__.py": "",
        "utils/logs.py": APPEND_LOG,
    },
    "train.py",
)
C["NEG_rank0_call_of_an_appending_log_helper_handed_the_mean"] = (
    R,
    False,
    {
        "train.py": HEAD
        + "from utils.logs import write_train_logs\n"
        + SETUP
        + LOGGED_BY
        + STEP
        + "            mean = loss.detach().clone()\n"
        + "            dist.all_reduce(mean)\n"
        + "            if rank == 0:\n"
        + '                write_train_logs(epoch, 0, mean.item() / dist.get_world_size(), "train_logs.tsv")\n',
        "utils/__init__.py": "",
        "utils/logs.py": APPEND_LOG,
    },
    "train.py",
)
# a project meter class whose update all-reduces, in a file the index reads after the trainer that
# builds it: what the trainer returns of it is the global value (Cardiobotics' AverageMeterDDP)
TRAINER_OF_METERS = """
from utils.meters import AverageMeterDDP


class Trainer:
    def __init__(self, criterion):
        self.criterion = criterion

    def train_epoch(self, model, loader, optimizer):
        losses = AverageMeterDDP()
        for x, y in loader:
            loss = self.criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.update(loss.item())
        return {"train/loss": losses.avg}
"""
METER = """
import torch
import torch.distributed as dist


class AverageMeterDDP:
    def __init__(self):
        self.sum, self.count, self.avg = 0.0, 0, 0.0

    def update(self, val):
        t = torch.tensor([val], device="cuda")
        %s
        self.sum += t.item()
        self.count += dist.get_world_size()
        self.avg = self.sum / self.count
"""
EPOCH_RESULT = (
    HEAD
    + "from trainers import Trainer\n"
    + SETUP
    + """    trainer = Trainer(criterion)
    for epoch in range(args.epochs):
        res = trainer.train_epoch(model, loader, optimizer)
        if rank == 0:
            print(res)
"""
)
C["NEG_epoch_result_of_a_meter_class_reducing_in_update_read_later"] = (
    R,
    False,
    {
        "train.py": EPOCH_RESULT,
        "trainers.py": TRAINER_OF_METERS,
        "utils/__init__.py": "",
        "utils/meters.py": METER % "dist.all_reduce(t)",
    },
    "train.py",
)
C["epoch_result_of_a_meter_class_not_reducing_read_later"] = (
    R,
    True,
    {
        "train.py": EPOCH_RESULT,
        "trainers.py": TRAINER_OF_METERS,
        "utils/__init__.py": "",
        "utils/meters.py": METER % "t = t.cpu()",
    },
    "train.py",
)
# a chain of closures, each handing on what the one below returns beside the loss (dialogue-generation's
# compute_loss -> forward_step -> train_step returning ``ppl`` next to the all-reduced loss): a shape
# that grows in one round of the flow reaches the callers read before it in the next
CHAIN = """
    def compute_loss(out, y):
        loss = criterion(out, y)
        ppl = torch.exp(loss).item()
        return loss, ppl

    def forward_step(x, y):
        loss, ppl = compute_loss(model(x), y)
        return loss, ppl

    def train_step(x, y):
        loss, ppl = forward_step(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss = loss.detach().clone()
        dist.all_reduce(loss)
        return {%s}

    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            results = train_step(x, y)
            if rank == 0:
                for name, value in results.items():
                    print(name, value)
"""
C["closure_chain_returning_the_local_perplexity"] = (
    R,
    True,
    one(CHAIN % '"loss": loss.item() / dist.get_world_size(), "ppl": ppl'),
    "train.py",
)
C["NEG_closure_chain_returning_only_the_reduced_loss"] = (
    R,
    False,
    one(CHAIN % '"loss": loss.item() / dist.get_world_size()'),
    "train.py",
)
# a rank-0 flag kept by a project base class of another file (VL-T5's ``TrainerBase.__init__``:
# ``self.verbose = True``, lowered off gpu 0), tested by the subclass that trains
BASE_TRAINER = """
import torch.distributed as dist


class TrainerBase:
    def __init__(self, args):
        self.args = args
%s
"""
SUB_TRAINER = (
    HEAD
    + "from trainer_base import TrainerBase\n"
    + """

class Trainer(TrainerBase):
    def __init__(self, args, model, loader, optimizer, criterion):
        super().__init__(args)
        self.model, self.loader, self.optimizer, self.criterion = model, loader, optimizer, criterion

    def train(self):
        for x, y in self.loader:
            loss = self.criterion(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if self.verbose:
                print(f"loss {loss.item():.4f}")
"""
)
C["rank0_flag_of_a_base_class_of_another_file"] = (
    R,
    True,
    {
        "train.py": SUB_TRAINER,
        "trainer_base.py": BASE_TRAINER
        % """        self.verbose = True
        if args.distributed:
            if dist.get_rank() != 0:
                self.verbose = False""",
    },
    "train.py",
)
C["NEG_option_flag_of_a_base_class_of_another_file"] = (
    R,
    False,
    {
        "train.py": SUB_TRAINER,
        "trainer_base.py": BASE_TRAINER % "        self.verbose = args.verbose",
    },
    "train.py",
)
# a meter a dict holds by a literal key (PVDM's ``losses["diffusion_loss"].update(loss.item(), 1)``),
# logged through a local name bound only to log functions (``log_ = print`` / ``log_ = logger.log``)
METER_BY_KEY = """
class AverageMeter:
    def __init__(self):
        self.sum, self.count, self.average = 0.0, 0, 0.0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n
        self.average = self.sum / self.count


def main(args, loader, net, logger=None):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    model = DDP(net.cuda(), device_ids=[rank])
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    if logger is None:
        log_ = print
    else:
        log_ = logger.log
    losses = {"loss": AverageMeter(), "lr": AverageMeter()}
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
C["meter_held_by_a_literal_key_logged_through_a_log_alias"] = (
    R,
    True,
    {
        "train.py": HEAD
        + METER_BY_KEY
        + STEP
        + """            losses["loss"].update(loss.item(), 1)
            losses["lr"].update(optimizer.param_groups[0]["lr"], 1)
            if rank == 0:
                log_("loss %f" % losses["loss"].average)
"""
    },
    "train.py",
)
C["NEG_other_meter_held_by_a_literal_key_logged_through_a_log_alias"] = (
    R,
    False,
    {
        "train.py": HEAD
        + METER_BY_KEY
        + STEP
        + """            losses["loss"].update(loss.item(), 1)
            losses["lr"].update(optimizer.param_groups[0]["lr"], 1)
            if rank == 0:
                log_("lr %f" % losses["lr"].average)
"""
    },
    "train.py",
)
C["NEG_meter_held_by_a_literal_key_all_reduced_before_its_log"] = (
    R,
    False,
    {
        "train.py": HEAD
        + METER_BY_KEY.replace(
            "        self.average = self.sum / self.count\n",
            "        self.average = self.sum / self.count\n\n"
            "    def all_reduce(self):\n"
            "        t = torch.tensor([self.sum, self.count], device='cuda')\n"
            "        dist.all_reduce(t)\n"
            "        self.average = (t[0] / t[1]).item()\n",
        )
        + STEP
        + """            losses["loss"].update(loss.item(), 1)
            losses["loss"].all_reduce()
            if rank == 0:
                print("loss %f" % losses["loss"].average)
"""
    },
    "train.py",
)
# a helper named like a collective whose code only sums this rank's loss terms (MonoDetector's
# ``reduce_loss_dict``: ``return sum([v for v in loss_dict.values()])``) combines nothing across ranks
SUMMED_TERMS = (
    HEAD
    + "from utils.comm import reduce_loss_dict\n"
    + SETUP
    + """    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            loss_dict = {"cls": criterion(model(x), y), "reg": model(x).abs().mean()}
            total_loss = reduce_loss_dict(loss_dict)
            optimizer.zero_grad()
            total_loss.backward()
            optimizer.step()
            if rank == 0:
                print(f"loss {total_loss.item():.4f}")
"""
)
C["helper_named_reduce_that_only_sums_the_terms"] = (
    R,
    True,
    {
        "train.py": SUMMED_TERMS,
        "utils/__init__.py": "",
        "utils/comm.py": """
def reduce_loss_dict(loss_dict):
    return sum([v for v in loss_dict.values()])
""",
    },
    "train.py",
)
C["NEG_helper_named_reduce_that_all_reduces_the_sum"] = (
    R,
    False,
    {
        "train.py": SUMMED_TERMS,
        "utils/__init__.py": "",
        "utils/comm.py": """
import torch.distributed as dist


def reduce_loss_dict(loss_dict):
    total = sum([v for v in loss_dict.values()])
    dist.all_reduce(total)
    return total / dist.get_world_size()
""",
    },
    "train.py",
)
# ``message += "{}: {:.3e} ".format(k, v)`` over a project model's ``current_log()`` items, in a loop
# whose backward runs inside the model's method (KAIR's main_train_psnr.py)
KAIR_MODEL = """
class ModelPlain:
    def optimize_parameters(self, step):
        self.optimizer.zero_grad()
        G_loss = self.lossfn(self.netG(self.L), self.H)
        G_loss.backward()
        self.optimizer.step()
        self.log_dict["G_loss"] = G_loss.item()

    def current_log(self):
        return self.log_dict
"""
KAIR_MAIN = """
import logging
from models.model_plain import ModelPlain


def main(opt, train_loader):
    logger = logging.getLogger("train")
    model = ModelPlain()
    for step, data in enumerate(train_loader):
        model.optimize_parameters(step)
        if step % 100 == 0 and opt["rank"] == 0:
            logs = model.current_log()
            message = "<iter {}> ".format(step)
            for k, v in logs.items():
                message += "{}: {:.3e} ".format(k, v)
LOG_HERE
"""
C["message_built_by_format_over_a_project_models_log_items"] = (
    R,
    True,
    {
        "main_train.py": KAIR_MAIN.replace("LOG_HERE", "            logger.info(message)"),
        "models/__init__.py": "",
        "models/model_plain.py": KAIR_MODEL,
    },
    "main_train.py",
)
C["NEG_message_rebuilt_after_the_log_items"] = (
    R,
    False,
    {
        "main_train.py": KAIR_MAIN.replace(
            "LOG_HERE",
            '            message = "<iter {}> done".format(step)\n            logger.info(message)',
        ),
        "models/__init__.py": "",
        "models/model_plain.py": KAIR_MODEL,
    },
    "main_train.py",
)
# the ``else`` of ``if wandb_run is not None and rank == 0:`` runs on rank 0 too (when there is no
# run): a rank-0 writer's branch there is rank 0's (OpenRLHF's TensorBoard ``elif``)
C["rank0_writer_in_the_else_of_a_run_and_rank0_test"] = (
    R,
    True,
    one(
        """
    run = wandb.init() if (rank == 0 and args.wandb) else None
    writer = SummaryWriter() if rank == 0 else None
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
        + STEP
        + """            if run is not None and rank == 0:
                run.log({"step": step})
            elif writer is not None and rank == 0:
                writer.add_scalar("loss", loss.item(), step)
"""
    ),
    "train.py",
)
# ``def train(..., rank=0)`` whose ``if rank == 0:`` guards the epoch loss, called by the launch
# script without ``rank`` (pangu-pytorch): every process sees rank 0 and logs its own loss, so the
# log is not rank 0's alone; the same def called with the process's rank is
PARAM_TRAIN = """
import torch


def train(model, loader, optimizer, criterion, epochs, rank=0):
    for epoch in range(epochs):
        epoch_loss = 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item()
        if rank == 0:
            print("epoch", epoch, "loss", epoch_loss / len(loader))
    return model
"""
PARAM_MAIN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from engine import train


def main(net, loader, args):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    model = DDP(net.cuda())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = torch.nn.MSELoss()
    model = train(model, loader, optimizer, criterion, args.epochs{PASS})
"""
C["rank_parameter_passed_by_the_launch_script"] = (
    R,
    True,
    {"engine.py": PARAM_TRAIN, "main.py": PARAM_MAIN.replace("{PASS}", ", rank=rank")},
    "engine.py",
)
C["NEG_rank_parameter_left_at_its_default_by_every_call"] = (
    R,
    False,
    {"engine.py": PARAM_TRAIN, "main.py": PARAM_MAIN.replace("{PASS}", "")},
    "engine.py",
)
# the epoch's mean gathered to rank 0 (``dist.gather(t, gather_list=parts, dst=0)`` in a helper), the
# global mean taken there and None elsewhere, then returned and logged by the caller on rank 0
# (FeedbackPrize3): the value returned is the global one; the rank's own meter returned is not
GATHER_EPOCH = """
import torch
import torch.distributed as dist


def my_gather(output, rank, world_size):
    parts = None
    if rank == 0:
        parts = [torch.empty_like(output) for _ in range(world_size)]
    dist.gather(output, gather_list=parts, dst=0)
    return parts


def train_one_epoch(rank, model, loader, optimizer, criterion, world_size):
    total = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    epoch_loss = torch.tensor([total / len(loader)], device=rank)
    epoch_loss = my_gather(epoch_loss, rank, world_size)
    if rank == 0:
        epoch_loss = torch.cat(epoch_loss).mean().item()
    else:
        epoch_loss = None
    return RETURNED


def main(rank, world_size, net, loader, epochs):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model = torch.nn.parallel.DistributedDataParallel(net.cuda(rank), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = torch.nn.MSELoss()
    for epoch in range(epochs):
        train_loss = train_one_epoch(rank, model, loader, optimizer, criterion, world_size)
        if rank == 0:
            print(f"epoch {epoch} train loss {train_loss:.4f}")
"""
C["rank_mean_returned_beside_a_gather_to_rank0"] = (
    R,
    True,
    {"train.py": GATHER_EPOCH.replace("RETURNED", "total / len(loader)")},
    "train.py",
)
C["NEG_gathered_mean_returned_none_off_rank0"] = (
    R,
    False,
    {"train.py": GATHER_EPOCH.replace("RETURNED", "epoch_loss")},
    "train.py",
)
# a dry run binds the name the training step's results later take to an evaluation's results (P5's
# ``results = self.evaluate_epoch(epoch=0)`` under ``if self.args.dry:``): backward never runs on what
# an evaluation returns, so its own rank-0 progress line shows validation values, not the loss; the
# training step's rank-0 line (TRAIN_LOG) still shows rank 0's local loss
DRY_RUN_EVALUATION = """
import torch
import torch.distributed as dist
from tqdm import tqdm


class Trainer:
    def __init__(self, args, model, train_loader, val_loader):
        self.args = args
        self.model = model
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.optim = torch.optim.AdamW(model.parameters(), lr=1e-4)
        self.verbose = dist.get_rank() == 0

    def train(self):
        if self.args.dry:
            results = self.evaluate_epoch(epoch=0)
        for epoch in range(self.args.epochs):
            self.train_loader.sampler.set_epoch(epoch)
            for step, batch in enumerate(self.train_loader):
                if self.args.distributed:
                    results = self.model.module.train_step(batch)
                else:
                    results = self.model.train_step(batch)
                loss = results["loss"]
                loss.backward()
                self.optim.step()
                self.optim.zero_grad()
                TRAIN_LOG
            valid = self.evaluate_epoch(epoch)

    def evaluate_epoch(self, epoch):
        epoch_results = {"loss": 0.0}
        self.model.eval()
        with torch.no_grad():
            if self.verbose:
                pbar = tqdm(total=len(self.val_loader))
            for batch in self.val_loader:
                results = self.model.module.valid_step(batch)
                for k, v in results.items():
                    epoch_results[k] += v.item()
                if self.verbose:
                    desc_str = f"valid {epoch} |"
                    for name, value in epoch_results.items():
                        desc_str += f" {name} {value:.3f}"
                    pbar.set_description(desc_str)
                    pbar.update(1)
        return epoch_results
"""
C["training_step_results_logged_beside_a_dry_run_evaluation"] = (
    R,
    True,
    {
        "trainer.py": DRY_RUN_EVALUATION.replace(
            "TRAIN_LOG", "if self.verbose:\n                    print(loss.item())"
        )
    },
    "trainer.py",
)
C["NEG_dry_run_evaluation_bound_to_the_training_results_name"] = (
    R,
    False,
    {"trainer.py": DRY_RUN_EVALUATION.replace("TRAIN_LOG", "pass")},
    "trainer.py",
)
# metrics that gather themselves across ranks (MONAI's ``CumulativeAverage``, whose ``aggregate()``
# all-reduces), built as a dict of them and fed by a helper of the file, then logged through the
# rank-0 ``accelerator.log`` (luisleo526's medical-segmentation): the global mean; a dict of plain
# lists averaged by the rank itself is its own
FED_METRICS = """
import torch
from accelerate import Accelerator
BUILD


def compute_metrics(loss, metrics):
    metrics["loss"].append(loss.detach())


def aggregate_metrics(split, metrics):
    results = {}
    for key, metric in metrics.items():
        results[f"{split}:{key}"] = float(AGGREGATE)
    return results


def main(cfg, model, loader):
    accelerator = Accelerator(log_with="wandb")
    optim = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model, optim, loader = accelerator.prepare(model, optim, loader)
    metrics = METRICS
    for epoch in range(cfg.num_epochs):
        results = {}
        model.train()
        for batch in loader:
            pred, loss = model(batch)
            accelerator.backward(loss)
            optim.step()
            optim.zero_grad()
            compute_metrics(loss, metrics)
        results.update(aggregate_metrics("train", metrics))
        accelerator.log(results)
"""
C["plain_lists_fed_by_a_helper_logged_by_accelerator_log"] = (
    R,
    True,
    {
        "train.py": FED_METRICS.replace("BUILD", "")
        .replace("METRICS", '{k: [] for k in ["dice", "loss"]}')
        .replace("AGGREGATE", "torch.stack(metric).mean()")
    },
    "train.py",
)
C["NEG_monai_cumulative_averages_fed_by_a_helper_logged_by_accelerator_log"] = (
    R,
    False,
    {
        "train.py": FED_METRICS.replace("BUILD", "from monai.metrics import CumulativeAverage")
        .replace("METRICS", '{k: CumulativeAverage() for k in ["dice", "loss"]}')
        .replace("AGGREGATE", "metric.aggregate()")
    },
    "train.py",
)
# the epoch's metrics rebuilt at the end from the loss sum combined across ranks (AllenNLP's
# ``train_loss = dist_reduce_sum(train_loss)`` then ``metrics = get_metrics(self.model, train_loss,
# ...)``, then items that are no loss), returned and written by the caller on rank 0: the global
# value, though the per-batch ``metrics`` of the same name was built from the local sum
EPOCH_METRICS = """
import torch
import torch.distributed as dist


def dist_reduce_sum(value):
    t = torch.tensor(value).cuda()
    dist.all_reduce(t)
    return t.item()


def get_metrics(model, total_loss, num_batches):
    metrics = model.get_metrics()
    metrics["loss"] = float(total_loss / num_batches) if num_batches > 0 else 0.0
    return metrics


class Trainer:
    def __init__(self, model, loader, rank):
        self.model = model
        self.loader = loader
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self._primary = rank == 0

    def _train_epoch(self, epoch):
        train_loss = 0.0
        batches = 0
        for batch in self.loader:
            loss = self.model(**batch)["loss"]
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            train_loss += loss.item()
            batches += 1
            metrics = get_metrics(self.model, train_loss, batches)
        REDUCE
        metrics = get_metrics(self.model, train_loss, batches)
        metrics["gpu_memory_MB"] = torch.cuda.max_memory_allocated() / 2**20
        return metrics

    def train(self, epochs):
        for epoch in range(epochs):
            train_metrics = self._train_epoch(epoch)
            if self._primary:
                print(epoch, train_metrics)
"""
C["epoch_metrics_rebuilt_from_the_local_sum_logged_on_rank0"] = (
    R,
    True,
    {"trainer.py": EPOCH_METRICS.replace("REDUCE", "batches = batches")},
    "trainer.py",
)
C["NEG_epoch_metrics_rebuilt_from_the_reduced_sum_logged_on_rank0"] = (
    R,
    False,
    {"trainer.py": EPOCH_METRICS.replace("REDUCE", "train_loss = dist_reduce_sum(train_loss)")},
    "trainer.py",
)
# the global wandb run started on rank 0 only (``if rank == 0: wandb.init(...)``): the module-level
# ``wandb.log`` of a helper writes rank 0's values, unguarded (jwarczynski/transformer); a run started
# on every rank (disabled off rank 0) is every rank's
WANDB_RUN = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import wandb
from torch.nn.parallel import DistributedDataParallel as DDP


def train_one_epoch(model, loader, loss_fn, optimizer):
    total = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        current = loss.item()
        total += current
        loss.backward()
        optimizer.step()
        wandb.log({"batch_loss": current})


def worker(rank, world_size, net, loader):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model = DDP(net.to(rank), device_ids=[rank])
    optimizer = torch.optim.AdamW(model.parameters())
    INIT
    for epoch in range(10):
        train_one_epoch(model, loader, torch.nn.CrossEntropyLoss(), optimizer)


if __name__ == "__main__":
    mp.spawn(worker, args=(2, None, None), nprocs=2)
"""
C["wandb_run_started_on_rank0_only_module_log"] = (
    R,
    True,
    {"train.py": WANDB_RUN.replace("INIT", 'if rank == 0:\n        wandb.init(project="x")')},
    "train.py",
)
C["NEG_wandb_run_started_on_every_rank_module_log"] = (
    R,
    False,
    {
        "train.py": WANDB_RUN.replace(
            "INIT",
            'if rank == 0:\n        wandb.init(project="x")\n    else:\n        wandb.init(mode="disabled")',
        )
    },
    "train.py",
)
# a rank compared to a name the file keeps for rank 0's number (kl-nn's ``self.log_rank = 0``, then
# ``if self.gpu_id == self.log_rank:``) is a rank-0 test; a rank name the file only sets to 0 is no
# rank (every process has it), so comparing it to another is no test
LOG_RANK = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, loader, gpu_id):
        self.rank = GPU
        self.log_rank = 0
        self.model = model
        self.loader = loader
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_epoch(self, epoch):
        losses = []
        for x, y in self.loader:
            self.optimizer.zero_grad()
            loss = self.model(x, y)
            loss.backward()
            self.optimizer.step()
            losses.append(loss.item())
        epoch_loss = sum(losses) / len(losses)
        if self.rank == self.log_rank:
            print("[TRAIN] epoch", epoch, "loss", epoch_loss)
        return epoch_loss


def worker(rank, world_size, net, loader):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model = DDP(net.to(rank), device_ids=[rank])
    trainer = Trainer(model, loader, rank)
    for epoch in range(10):
        trainer.train_epoch(epoch)


if __name__ == "__main__":
    mp.spawn(worker, args=(2, None, None), nprocs=2)
"""
C["rank_compared_to_a_name_kept_for_rank0"] = (
    R,
    True,
    {"train.py": LOG_RANK.replace("GPU", "gpu_id")},
    "train.py",
)
C["NEG_constant_rank_compared_to_a_name_kept_for_rank0"] = (
    R,
    False,
    {"train.py": LOG_RANK.replace("GPU", "0")},
    "train.py",
)
# a contrastive loss over the whole global batch (E-Zero: both embeddings all-gathered into lists,
# concatenated, then ``clip_loss(all_a, all_b)``; the loss and its terms) has one value on every
# rank; one that multiplies the local features by the gathered ones (open_clip) is rank 0's own
GATHERED_LOSS = """
import torch
import torch.distributed as dist
import torch.nn.functional as F


def clip_loss(a, b):
    logits = a @ b.t()
    labels = torch.arange(len(a), device=a.device)
    return F.cross_entropy(logits, labels), logits.argmax(1)


def train(model, loader, optimizer):
    rank = dist.get_rank()
    world = dist.get_world_size()
    for x, t in loader:
        img, txt = model(x, t)
        with torch.no_grad():
            all_img = [torch.zeros_like(img) for _ in range(world)]
            all_txt = [torch.zeros_like(txt) for _ in range(world)]
            dist.all_gather(all_img, img)
            dist.all_gather(all_txt, txt)
        all_img[rank] = img
        all_txt[rank] = txt
        all_img = torch.cat(all_img, dim=0)
        all_txt = torch.cat(all_txt, dim=0)
        i2t_loss, _ = clip_loss(LEFT, all_txt)
        t2i_loss, _ = clip_loss(all_txt, all_img)
        loss = i2t_loss + t2i_loss
        if rank == 0:
            print("loss", loss.item(), "i2t", i2t_loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""
C["NEG_loss_over_all_gathered_embeddings_logged_on_rank0"] = (
    R,
    False,
    {"train.py": GATHERED_LOSS.replace("LEFT", "all_img")},
    "train.py",
)
C["loss_of_local_by_gathered_embeddings_logged_on_rank0"] = (
    R,
    True,
    {"train.py": GATHERED_LOSS.replace("LEFT", "img")},
    "train.py",
)


# a validation loop under no_grad that reuses the training names (``out = model(x)``, ``l_aux =
# aux_loss(out, y)``, ``total = l_main + l_aux``) shows its own values on a rank-0 bar; a value it
# computes from the training loss bound outside it is the training's (CanglongPhysics)
VALID_BAR = """
def aux_loss(out, y):
    return (out - y).abs().mean()


def train(rank, model, loader, val_loader, optimizer, criterion):
    for x, y in loader:
        out = model(x)
        l_main = criterion(out, y)
        l_aux = aux_loss(out, y)
        total = l_main + l_aux
        optimizer.zero_grad()
        total.backward()
        optimizer.step()
    with torch.no_grad():
        bar = tqdm(val_loader, disable=rank != 0)
        for x, y in bar:
            VALID
            bar.set_postfix({"loss": f"{total.item():.4f}"})
"""
C["valid_bar_shows_the_training_total"] = (
    R,
    True,
    one(VALID_BAR.replace("VALID", "shown = l_main * 1.0")),
    "train.py",
)
C["NEG_valid_bar_shows_its_own_forward"] = (
    R,
    False,
    one(
        VALID_BAR.replace(
            "VALID",
            "out = model(x)\n            l_main = criterion(out, y)\n            l_aux = aux_loss(out, y)\n"
            "            total = l_main + l_aux",
        )
    ),
    "train.py",
)


# Round 24 (proVLAE): ``if use_wandb and distributed: <gathered> elif use_wandb: wandb.log(loss)`` -- the
# ``elif`` tests exactly the other conjuncts, so it runs only when the run is not distributed; an
# ``elif`` on another flag runs in distributed runs too, where the run started on rank 0 only logs
# rank 0's loss.
ELIF_CONJUNCTS = """import torch
import torch.distributed as dist
import wandb
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, loader, optimizer, params):
    for x, y in loader:
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if params.use_wandb and params.distributed:
            gathered = [None] * params.world_size
            dist.all_gather_object(gathered, {"loss": loss.item()})
            if params.local_rank == 0:
                wandb.log(gathered[0])
        elif params.use_wandb:
            wandb.log({"loss": loss.item()})


def main(params, net, loader, optimizer):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    if rank == 0:
        wandb.init(project="x")
    model = DDP(net.cuda(), device_ids=[params.local_rank])
    train(model, loader, optimizer, params)
"""
C["elif_on_another_flag_beside_the_distributed_branch"] = (
    R,
    True,
    {"train.py": ELIF_CONJUNCTS.replace("elif params.use_wandb:", "elif params.log_all:")},
    "train.py",
)
C["NEG_elif_of_the_other_conjuncts_runs_single_process"] = (
    R,
    False,
    {"train.py": ELIF_CONJUNCTS},
    "train.py",
)


# Round 24 (normalizing-flows glow): the process's rank set to 0 only where no launcher gave one
# (``else: args.local_rank = 0``) is no constant; ``args.local_rank == 0`` stays a rank-0 test, while a
# rank-named value the file only sets to 0 (kl-nn's ``self.log_rank = 0``) is rank 0's number.
RANK_SET_TO_ZERO_OFF_LAUNCHER = """import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--distributed", action="store_true")
parser.add_argument("--local_rank", type=int)


def train_epoch(model, loader, optimizer, args):
    for x, y in loader:
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if args.on_main_process:
            print(f"loss {loss.item():.4f}")


def main():
    args = parser.parse_args()
    if args.distributed:
        dist.init_process_group("nccl")  # torch.distributed.launch passes --local_rank
    else:
        if torch.cuda.is_available():
            args.local_rank = 0
    args.on_main_process = (args.distributed and args.local_rank == 0) or not args.distributed
    model = DDP(torch.nn.Linear(2, 2).cuda(), device_ids=[args.local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_epoch(model, [], optimizer, args)
"""
C["rank_set_to_zero_only_off_the_launcher"] = (
    R,
    True,
    {"train.py": RANK_SET_TO_ZERO_OFF_LAUNCHER},
    "train.py",
)
C["NEG_rank_set_to_zero_only_off_the_launcher_every_rank_logs"] = (
    R,
    False,
    {"train.py": RANK_SET_TO_ZERO_OFF_LAUNCHER.replace("if args.on_main_process:", "if True:")},
    "train.py",
)


# Round 25 (DDPM-weather): an "am I rank 0?" helper of another file answers True when there is one
# process (``if torch.cuda.device_count() < 2: return True``) and ``dist.get_rank() == 0`` otherwise;
# its callers' logs are rank 0's. A helper that answers True every hundredth step lets every rank log.
MAIN_GPU_UTILS = """
import torch
import torch.distributed as dist


def is_main_gpu(step=0):
    if SINGLE:
        return True
    return dist.get_rank() == 0
"""
MAIN_GPU_TRAIN = """
import torch
from utils.distributed import is_main_gpu


def run_epoch(model, loader, optimizer):
    total = 0.0
    for i, (x, y) in enumerate(loader):
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
        if is_main_gpu(i):
            print(f"loss {total / (i + 1):.4f}")
"""
C["rank0_helper_true_when_one_device"] = (
    R,
    True,
    {
        "utils/__init__.py": "",
        "utils/distributed.py": MAIN_GPU_UTILS.replace("SINGLE", "torch.cuda.device_count() < 2"),
        "trainer.py": MAIN_GPU_TRAIN,
    },
    "trainer.py",
)
C["NEG_rank0_helper_true_every_hundredth_step"] = (
    R,
    False,
    {
        "utils/__init__.py": "",
        "utils/distributed.py": MAIN_GPU_UTILS.replace("SINGLE", "step % 100 == 0"),
        "trainer.py": MAIN_GPU_TRAIN,
    },
    "trainer.py",
)
# Round 25 (DDPM-weather): a method logging whatever metrics dict it is handed, on rank 0 only, handed
# ``{"avg_loss": loss.item(), "lr": lr}``: the call that hands it the loss is the event (reported
# there, where the fix goes), not the method's sinks; a method only ever handed the loss is the event
METRICS_DICT = """
import torch
import torch.distributed as dist
import wandb


class Trainer:
    def __init__(self, model, loader, optimizer):
        self.model = model
        self.loader = loader
        self.optimizer = optimizer

    def _log(self, step, log_dict):
        if dist.get_rank() != 0:
            return
        wandb.log(log_dict, step=step)

    def train(self):
        for i, (x, y) in enumerate(self.loader):
            loss = self.model(x, y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            log = {"avg_loss_it": loss.item()LR}
            self._log(i, log)
"""
C["metrics_dict_handed_to_a_rank0_logging_method_reported_at_the_call"] = (
    R,
    True,
    {"trainer.py": METRICS_DICT.replace("LR", ', "lr_it": self.optimizer.param_groups[0]["lr"]')},
    "trainer.py:25",
)
C["NEG_loss_only_dict_handed_to_a_rank0_logging_method_not_reported_at_the_call"] = (
    R,
    False,
    {"trainer.py": METRICS_DICT.replace("LR", "")},
    "trainer.py:25",
)
# Round 25 (FastPCC): the loop variable of the training logs (``for name, item in loss_dict.items():
# item = item.item()``) reused by a later loop over the test results logged on rank 0: that loop's
# values are not the loss; a later loop over the loss dict again still logs it
LOOP_VARIABLE_REUSED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.tensorboard import SummaryWriter


def main(net, loader, evaluate, args):
    dist.init_process_group("nccl")
    local_rank = dist.get_rank()
    model = DDP(net.cuda())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    tb_writer = SummaryWriter() if local_rank == 0 else None
    for epoch in range(args.epochs):
        for x in loader:
            loss_dict = model(x)
            optimizer.zero_grad()
            loss_dict["loss"].backward()
            optimizer.step()
            for item_name, item in loss_dict.items():
                item = item.item()
        if local_rank in (-1, 0):
            test_items = evaluate(model)
            for item_name, item in ITEMS.items():
                tb_writer.add_scalar("Test/" + item_name, item, epoch)
"""
C["loop_variable_of_the_loss_dict_logged_by_a_later_loop_over_it"] = (
    R,
    True,
    {"train.py": LOOP_VARIABLE_REUSED.replace("ITEMS", "loss_dict")},
    "train.py",
)
C["NEG_loop_variable_of_the_loss_dict_reused_over_test_results"] = (
    R,
    False,
    {"train.py": LOOP_VARIABLE_REUSED.replace("ITEMS", "test_items")},
    "train.py",
)
# Round 25 (lavse): ``if self.master:`` where the constructor sets ``self.master = master`` from a
# parameter that defaults to True and that no construction of the class passes: every process is
# "master" and logs its own loss; the class built with ``master=(rank == 0)`` logs on rank 0 only
MASTER_TRAINER = """
import torch


class Trainer:
    def __init__(self, model, optimizer, master=True):
        self.model = model
        self.optimizer = optimizer
        self.master = master

    def train_epoch(self, loader):
        for x, y in loader:
            loss = self.model(x, y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if self.master:
                print(f"loss {loss.item():.4f}")
"""
MASTER_RUN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from lib import train


def main(net, loader):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    model = DDP(net.cuda())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    trainer = train.Trainer(model=model, optimizer=optimizer{PASS})
    trainer.train_epoch(loader)
"""
C["master_flag_passed_as_the_rank0_test"] = (
    R,
    True,
    {
        "lib/__init__.py": "",
        "lib/train.py": MASTER_TRAINER,
        "run.py": MASTER_RUN.replace("{PASS}", ", master=rank == 0"),
    },
    "lib/train.py",
)
C["NEG_master_flag_left_at_its_default_by_every_construction"] = (
    R,
    False,
    {"lib/__init__.py": "", "lib/train.py": MASTER_TRAINER, "run.py": MASTER_RUN.replace("{PASS}", "")},
    "lib/train.py",
)


# Round 28 (melodyt5's ``process_one_batch``): the step helper reduces the loss to rank 0 in place,
# rescales it and broadcasts it back before returning it; the epoch's mean of what it returns, written
# under the rank-0 test, is the cross-rank mean. The near-miss returns the loss it never reduced.
REDUCED_STEP = """
def process_one_batch(model, batch, world_size):
    x, y = batch
    loss = nn.functional.cross_entropy(model(x), y)
    if world_size > 1:
        loss = loss.unsqueeze(0)
        REDUCE
        loss = loss / world_size
    return loss


def main(args, loader, net):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    model = DDP(net.cuda())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for epoch in range(args.epochs):
        total = 0.0
        for batch in loader:
            loss = process_one_batch(model, batch, dist.get_world_size())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        if rank == 0:
            print("epoch", epoch, "train_loss", total / len(loader))
"""
C["NEG_helper_returns_the_loss_it_reduced_in_place_and_rescaled"] = (
    R,
    False,
    {"train.py": HEAD + REDUCED_STEP.replace("REDUCE", "dist.reduce(loss, dst=0)")},
    "train.py",
)
C["helper_returns_the_loss_it_only_rescaled"] = (
    R,
    True,
    {"train.py": HEAD + REDUCED_STEP.replace("REDUCE", "pass")},
    "train.py",
)

# Round 28 (Revisiting-FSCIL's ``utils.lr_scaler(self.args, batch_size)``): a project function named
# ``..._scaler`` that scales the learning-rate settings is no loss scaler, so the configuration it is
# handed is no backward root and what is read from it is no loss. The near-miss hands the loss to a
# project ``loss_scaler`` function that runs the backward.
LR_SCALER = """
import torch


def lr_scaler(cfg, batch_size):
    cfg.lr = cfg.lr * batch_size / 256
    return cfg


def loss_scaler(loss, optimizer):
    loss.backward()
    optimizer.step()
"""
LR_SCALER_RUN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import utils


class Learner:
    def __init__(self, args, net):
        self.args = args
        self.model = DDP(net.cuda())

    def before_task(self, loader):
        CALL
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=self.args.lr)

    def train(self, loader):
        for x, y in loader:
            loss = self.model(x, y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        stats = {"epochs": self.args.epochs}
        if dist.get_rank() == 0:
            print(stats)
"""
C["NEG_lr_scaler_of_the_project_is_no_loss_scaler"] = (
    R,
    False,
    {
        "utils.py": LR_SCALER,
        "train.py": LR_SCALER_RUN.replace(
            "CALL", "self.args = utils.lr_scaler(self.args, loader.batch_size)"
        ),
    },
    "train.py",
)
C["loss_handed_to_a_project_loss_scaler"] = (
    R,
    True,
    {
        "utils.py": LR_SCALER,
        "train.py": LR_SCALER_RUN.replace("CALL", "self.args = utils.lr_scaler(self.args, loader.batch_size)")
        .replace(
            "            self.optimizer.zero_grad()\n            loss.backward()\n            self.optimizer.step()\n",
            "            self.optimizer.zero_grad()\n            utils.loss_scaler(loss, self.optimizer)\n",
        )
        .replace("stats = {", 'stats = {"loss": loss.item(), '),
    },
    "train.py",
)
