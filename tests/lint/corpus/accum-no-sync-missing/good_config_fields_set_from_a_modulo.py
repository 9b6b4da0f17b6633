# VGen: the config's fields are set from ``rank % n`` before training; ``if cfg.use_fsdp:`` picks
# the engine, it is no accumulation guard, and every step steps the optimizer.
import torch
from torch.nn.parallel import DistributedDataParallel


def worker(gpu, cfg, model, loader, optimizer, scaler):
    cfg.rank = cfg.pmi_rank * cfg.gpus_per_machine + gpu
    cfg.max_frames = cfg.frame_lens[cfg.rank % len(cfg.frame_lens)]
    model = DistributedDataParallel(model, device_ids=[gpu])
    for step, batch in enumerate(loader):
        with torch.cuda.amp.autocast(enabled=cfg.use_fp16):
            loss = model(batch).mean()
        if cfg.use_fsdp:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        else:
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        if step % cfg.log_interval == 0:
            print(step)
