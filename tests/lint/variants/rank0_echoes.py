"""rank0-only-loss-log: logs that repeat or illustrate a value another rank-0 log already showed
(round 26): a log file's copy of the printed line, the end-of-run dump of the epoch losses, a sample
image table beside the loss. Each positive is the near miss that is still a loss log of its own."""

HEAD = """
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args, loader, net):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    model = DDP(net.cuda())
    criterion = nn.MSELoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
"""


def at(source: str, marker: str) -> str:
    """``train.py:LINE`` of the line of ``source`` holding ``marker``."""
    line = next(i for i, text in enumerate(source.splitlines(), start=1) if marker in text)
    return f"train.py:{line}"


R = "rank0-only-loss-log"
C: dict[str, tuple[str, bool, dict[str, str], str]] = {}

# rfpp: the message printed under ``rank == 0`` is appended to log.txt under the same test: one event
TEE = (
    HEAD
    + """
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0 and rank == 0:
            log = f"step {step} loss {loss.item():.4f}"
            PRINT
            with open("log.txt", "a") as f:
                f.write(log)  # the write
"""
)
C["log_file_written_without_a_print"] = (
    R,
    True,
    {"train.py": TEE.replace("PRINT", "pass")},
    at(TEE, "the write"),
)
C["NEG_log_file_copy_of_the_printed_line"] = (
    R,
    False,
    {"train.py": TEE.replace("PRINT", "print(log)")},
    at(TEE, "the write"),
)

# SAM-Med3D / skin-disease DDP: each epoch logs its (local) epoch loss on rank 0 and keeps it in a
# history; once training ends the history is dumped again: the same values, the same fix
HISTORY = (
    HEAD
    + """
    history = []
    for epoch in range(args.epochs):
        total = 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            SHOWN
        epoch_loss = total / len(loader)
        KEPT
        if rank == 0:
            print(f"epoch {epoch} loss {epoch_loss:.4f}")
    if rank == 0:
        print(f"losses per epoch: {history}")  # the dump
"""
)
C["history_of_values_no_log_showed"] = (
    R,
    True,
    {
        "train.py": HISTORY.replace("SHOWN", "pass")
        .replace("KEPT", "history.append(total / len(loader))")
        .replace('print(f"epoch {epoch} loss {epoch_loss:.4f}")', "pass")
    },
    at(HISTORY, "the dump"),
)
C["history_of_sums_of_the_logged_step_losses"] = (
    R,
    True,
    {
        "train.py": HISTORY.replace("SHOWN", "if rank == 0: print(loss.item())")
        .replace("KEPT", "history.append(total / len(loader))")
        .replace('print(f"epoch {epoch} loss {epoch_loss:.4f}")', "pass")
    },
    at(HISTORY, "the dump"),
)
C["NEG_end_of_run_dump_of_the_logged_epoch_losses"] = (
    R,
    False,
    {"train.py": HISTORY.replace("SHOWN", "pass").replace("KEPT", "history.append(epoch_loss)")},
    at(HISTORY, "the dump"),
)

# pixel2style2pixel: a sample table of images with the loss call's per-sample ``id_logs`` beside them
MEDIA = (
    HEAD
    + """
    for step, (x, y) in enumerate(loader):
        y_hat = model(x)
        loss, loss_dict, id_logs = criterion(y_hat, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0 and step % 1000 == 0:
            wb_logger.LOGGED(x, y, y_hat, id_logs, step=step)  # the log
"""
)
C["loss_terms_to_a_logger_method"] = (
    R,
    True,
    {"train.py": MEDIA.replace("LOGGED", "log_metrics")},
    at(MEDIA, "the log"),
)
C["NEG_sample_images_with_per_sample_logs"] = (
    R,
    False,
    {"train.py": MEDIA.replace("LOGGED", "log_images_to_wandb")},
    at(MEDIA, "the log"),
)
