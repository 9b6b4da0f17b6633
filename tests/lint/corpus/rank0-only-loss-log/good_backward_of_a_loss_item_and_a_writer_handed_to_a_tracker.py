# DAC style (audiotools): the backward runs on `output["loss"]`, so the accelerator object is not the
# loss; the rank-0 writer handed to a tracker's constructor logs nothing by itself.
from torch.utils.tensorboard import SummaryWriter
from audiotools.ml.decorators import Tracker


def train_loop(state, batch, accel):
    output = {}
    output["loss"] = state.model(batch).mean()
    state.optimizer.zero_grad()
    accel.backward(output["loss"])
    accel.step(state.optimizer)
    return output


def train(state, loader, accel):
    writer = SummaryWriter() if accel.local_rank == 0 else None
    tracker = Tracker(writer=writer, log_file="log.txt", rank=accel.local_rank)
    for batch in loader:
        train_loop(state, batch, accel)
    tracker.done("train", "end")
