# ColBERT style: a mixed-precision manager object backprops each micro-batch and later steps the
# optimizer it is handed (`amp.step(model, optimizer, scheduler)`); the DDP model all-reduces on
# every micro-batch of the inner loop.
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, reader, amp, config):
    model = DDP(model)
    optimizer = torch.optim.AdamW(model.parameters())
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer)
    for batch_steps in reader:
        for batch in batch_steps:
            with amp.context():
                loss = model(batch).mean() / config.accumsteps
            amp.backward(loss)  # expect: accum-no-sync-missing
        amp.step(model, optimizer, scheduler)
