# fp16 by casting the weights when `--precision fp16` (the default), no autocast, no GradScaler:
# config-gated, naming the flag value.
import argparse

from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--precision", default="fp16", choices=["fp16", "fp32"])
args = parser.parse_args()


def main(model, loader, optimizer):
    if args.precision == "fp16":
        model = model.half()  # expect: fp16-no-scaler
    model = DDP(model)
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
