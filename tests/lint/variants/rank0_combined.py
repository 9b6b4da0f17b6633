"""Values that are every rank's by the time rank 0 logs them (round 26): a collective in the log's own
expression (``accelerator.gather(losses).mean().item()``), a tensor all-reduced in place and then
rebound before it is unpacked (``metrics = metrics / world_size``), a value synced at the end of a
loop pass and logged at the top of the next one, a coefficient of a loss term (``kl_m * kl_loss``),
and a log inside a helper of another file that tests the rank itself (reported there, not again at
its call). Each beside the near-miss that still logs this rank's own value."""

R = "rank0-only-loss-log"
C = {}

# lm-human-preference-details' reward training: the writer exists on the main process only and logs
# the micro-batch losses gathered from every process
GATHERED_INLINE = """
import torch
from accelerate import Accelerator
from torch.utils.tensorboard import SummaryWriter


def main(args, model, loader, optimizer):
    accelerator = Accelerator(gradient_accumulation_steps=2)
    writer = SummaryWriter() if accelerator.is_main_process else None
    model, optimizer = accelerator.prepare(model, optimizer)
    for step in range(args.steps):
        losses = torch.zeros((2,), device=accelerator.device)
        i = 0
        for x, y in loader:
            with accelerator.accumulate(model):
                loss = torch.nn.functional.cross_entropy(model(x), y)
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
                losses[i] = loss
            i += 1
        if accelerator.is_main_process:
            writer.add_scalar("train/loss", LOGGED, step)
"""
C["losses_logged_without_the_gather"] = (
    R,
    True,
    {"train.py": GATHERED_INLINE.replace("LOGGED", "losses.mean().item()")},
    "train.py",
)
C["gathered_item_picked_by_index"] = (
    R,
    True,
    {"train.py": GATHERED_INLINE.replace("LOGGED", "accelerator.gather(losses)[0].item()")},
    "train.py",
)
C["NEG_losses_gathered_in_the_log_expression"] = (
    R,
    False,
    {"train.py": GATHERED_INLINE.replace("LOGGED", "accelerator.gather(losses).mean().item()")},
    "train.py",
)

# NERVE's epoch means: a tensor of the means all-reduced in place, divided by the world size into
# the same name, then unpacked back into the loss names before the rank-0 print
REBOUND_AFTER_REDUCE = """
import torch
import torch.distributed as dist


def train_one_epoch(model, loader, optimizer):
    total, total_aux = 0.0, 0.0
    for x, y in loader:
        loss, aux = model(x, y)
        optimizer.zero_grad()
        (loss + aux).backward()
        optimizer.step()
        total += loss.item()
        total_aux += aux.item()
    return total / len(loader), total_aux / len(loader)


def main(args, model, loader, optimizer):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    for epoch in range(args.epochs):
        loss, aux_loss = train_one_epoch(model, loader, optimizer)
        metrics = torch.tensor([loss, aux_loss], device="cuda")
REDUCE
        metrics = metrics / world_size
        loss, aux_loss = metrics.tolist()
        if rank == 0:
            print(f"epoch {epoch} loss {loss:.4f} aux {aux_loss:.4f}")
"""
C["NEG_means_all_reduced_then_divided_into_the_same_name"] = (
    R,
    False,
    {"train.py": REBOUND_AFTER_REDUCE.replace("REDUCE", "        dist.all_reduce(metrics)")},
    "train.py",
)
C["means_divided_into_the_same_name_never_reduced"] = (
    R,
    True,
    {"train.py": REBOUND_AFTER_REDUCE.replace("REDUCE", "        metrics = metrics.clone()")},
    "train.py",
)

# cal-ql's offline loop: each pass logs the metrics of the previous pass at its top, and ends with
# ``train_metrics = sync_metrics(train_metrics)`` (an all-reduce of each value)
CARRIED = """
import torch
import torch.distributed as dist
import wandb


def sync_metrics(metrics):
    out = {}
    for k, v in metrics.items():
        t = torch.tensor(v, device="cuda")
        dist.all_reduce(t)
        out[k] = (t / dist.get_world_size()).item()
    return out


def main(args, model, loader, optimizer):
    dist.init_process_group("nccl")
    is_main = dist.get_rank() == 0
    train_metrics = None
    epoch = 0
    while True:
        metrics = {"epoch": epoch}
        if train_metrics is not None:
            metrics.update(train_metrics)
        if is_main:
            wandb.log(metrics)
        if epoch >= args.epochs:
            break
        sums = {}
        for x, y in loader:
            loss = model(x, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            sums["loss"] = sums.get("loss", 0.0) + loss.item()
        train_metrics = {k: v / len(loader) for k, v in sums.items()}
SYNC
        epoch += 1
"""
C["NEG_metrics_synced_at_the_end_of_the_previous_pass"] = (
    R,
    False,
    {"train.py": CARRIED.replace("SYNC", "        train_metrics = sync_metrics(train_metrics)")},
    "train.py",
)
C["metrics_of_the_previous_pass_never_synced"] = (
    R,
    True,
    {"train.py": CARRIED.replace("SYNC", "        train_metrics = dict(train_metrics)")},
    "train.py",
)

# NPVAE: ``loss = recon_loss + kl_m * kl_loss`` with ``kl_m`` annealed and written to the log; the
# coefficient is a setting, the KL term is the loss
COEFFICIENT = """
import torch
import torch.distributed as dist


def main(rank, args, model, loader, optimizer):
    dist.init_process_group("nccl", rank=rank, world_size=args.world_size)
    kl_m = 0.1
    for epoch in range(args.epochs):
        for x, y in loader:
            recon_loss, kl_loss = model(x, y)
            loss = recon_loss + kl_m * kl_loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        kl_m += 0.01
        if rank == 0:
            with open("log.txt", "a") as f:
                f.write("LOGGED\\n".format(VALUE))
"""
C["NEG_annealed_coefficient_of_a_loss_term"] = (
    R,
    False,
    {"train.py": COEFFICIENT.replace("LOGGED", "KL coef:{}").replace("VALUE", "kl_m")},
    "train.py",
)
C["loss_term_beside_its_coefficient"] = (
    R,
    True,
    {"train.py": COEFFICIENT.replace("LOGGED", "KL:{}").replace("VALUE", "kl_loss.item()")},
    "train.py",
)

# ECG-Bench's ``train_dev_break(enabled, batch, loss_value)`` in another file: it prints under its
# own ``if is_main():`` and then broadcasts a flag; its file reports the print, its call is no
# second finding. A rank-0 printer (one rank-0 test around prints, nothing else) is reported at
# each call instead.
DEV_BREAK = """
import torch.distributed as dist


def is_main():
    return not dist.is_initialized() or dist.get_rank() == 0


def train_dev_break(enabled, batch, loss_value):
    if not enabled:
        return False
    should_break = False
    if is_main():
        print("loss", loss_value)
        should_break = True
    return should_break
"""
PRINTER = """
import torch.distributed as dist


def is_main():
    return not dist.is_initialized() or dist.get_rank() == 0


def train_dev_break(enabled, batch, loss_value):
    if is_main():
        print("loss", loss_value)
"""
DEV_TRAIN = """
import torch
import torch.distributed as dist
from utils.setup import train_dev_break


def train(args, model, loader, optimizer):
    dist.init_process_group("nccl")
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if train_dev_break(args.dev, x, loss.item()):
            break
"""
C["helper_of_another_file_reports_its_own_rank0_print"] = (
    R,
    True,
    {"utils/__init__.py": "", "utils/setup.py": DEV_BREAK, "train.py": DEV_TRAIN},
    "utils/setup.py",
)
C["NEG_call_of_a_helper_that_tests_the_rank_itself"] = (
    R,
    False,
    {"utils/__init__.py": "", "utils/setup.py": DEV_BREAK, "train.py": DEV_TRAIN},
    "train.py",
)
C["call_of_a_rank0_printer_of_another_file"] = (
    R,
    True,
    {"utils/__init__.py": "", "utils/setup.py": PRINTER, "train.py": DEV_TRAIN},
    "train.py",
)

# FSRE-Depth's step: every entry of the loss dict is replaced by its all-reduced mean in a loop over
# the dict's keys before the rank-0 log; the near-miss replaces them with a local detach only
KEYS_REPLACED = """
import torch.distributed as dist


def reduce_tensor(tensor, world_size):
    rt = tensor.clone()
    dist.all_reduce(rt, op=dist.ReduceOp.SUM)
    rt /= world_size
    return rt


def train(args, model, loader, optimizer, writer):
    for step, batch in enumerate(loader):
        losses = model(batch)
        optimizer.zero_grad()
        losses["loss"].backward()
        optimizer.step()
        for key in KEYS:
            losses[key] = REPLACED
        if args.local_rank == 0:
            writer.add_scalar("train/loss", losses["loss"].item(), step)
"""
for keys in ("losses", "losses.keys()", "list(losses)"):
    C[f"NEG_dict_items_reduced_over_{keys}"] = (
        R,
        False,
        {
            "train.py": KEYS_REPLACED.replace("KEYS", keys).replace(
                "REPLACED", "reduce_tensor(losses[key].data, args.world_size)"
            )
        },
        "train.py",
    )
C["dict_items_replaced_by_local_detach"] = (
    R,
    True,
    {"train.py": KEYS_REPLACED.replace("KEYS", "losses").replace("REPLACED", "losses[key].detach()")},
    "train.py",
)
C["dict_items_of_another_dict_reduced"] = (
    R,
    True,
    {
        "train.py": KEYS_REPLACED.replace("KEYS", "other").replace(
            "REPLACED", "reduce_tensor(losses[key].data, args.world_size)"
        )
    },
    "train.py",
)

# mmcv's ``_parse_losses`` loop in the training step itself: each item is cloned, all-reduced in place
# and written back (``dicts_replaced_by_reduced``, one reading for the step and for a model's returned
# dict); the near-miss writes back the tensor it did not reduce
ITEMS_REDUCED_IN_PLACE = KEYS_REPLACED.replace(
    """        for key in KEYS:
            losses[key] = REPLACED
""",
    """        for key, value in losses.items():
            reduced = value.data.clone()
            dist.all_reduce(reduced.div_(args.world_size))
            losses[key] = STORED
""",
)
C["NEG_dict_items_reduced_in_place_in_the_loop"] = (
    R,
    False,
    {"train.py": ITEMS_REDUCED_IN_PLACE.replace("STORED", "reduced")},
    "train.py",
)
C["dict_items_written_back_unreduced"] = (
    R,
    True,
    {"train.py": ITEMS_REDUCED_IN_PLACE.replace("STORED", "value")},
    "train.py",
)
