# The loss is the item `output["loss"]` the backward runs on; rank 0 writes it alone.
from torch.utils.tensorboard import SummaryWriter


def train(state, loader, accel):
    writer = SummaryWriter() if accel.local_rank == 0 else None
    for step, batch in enumerate(loader):
        output = {}
        output["loss"] = state.model(batch).mean()
        accel.backward(output["loss"])
        accel.step(state.optimizer)
        if accel.local_rank == 0:
            writer.add_scalar("loss", output["loss"].item(), step)  # expect: rank0-only-loss-log
