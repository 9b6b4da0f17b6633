import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

def main(model, loader, opt):
    model = model.cuda().half()  # expect: fp16-no-scaler
    model = DDP(model)
    for x, y in loader:
        loss = F.cross_entropy(model(x.half()), y)
        loss.backward()
        opt.step()
