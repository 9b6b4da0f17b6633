# The local context is the DDP model's own no_sync on every micro-step but the last (a variable
# holding the context, not FSDP-only): the sync is skipped, nothing to report.
from contextlib import nullcontext

from torch.nn.parallel import DistributedDataParallel


def train_step(model, optimizer, inputs, accum_freq, device):
    model = DistributedDataParallel(model, device_ids=[device])
    per_batch = inputs.shape[0] // accum_freq
    for ii in range(accum_freq):
        maybe_no_sync = nullcontext
        if ii != accum_freq - 1:
            maybe_no_sync = model.no_sync
        with maybe_no_sync():
            loss = model(inputs[ii * per_batch : (ii + 1) * per_batch]).mean() / accum_freq
            loss.backward()
    optimizer.step()
    optimizer.zero_grad()
