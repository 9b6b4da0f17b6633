import torch


def train(model, get_batch, optimizer, dtype, scaler):
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    ctx = torch.amp.autocast(device_type="cuda", dtype=ptdtype)
    with ctx:
        logits, loss = model(*get_batch())
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
