"""Step boundaries the way training engines run them (no probe code; gloo DDP or one process).

Modes (argv[1]); argv[2], if given, is where rank 0 saves the final parameters and buffers:
* closure: Lightning automatic optimisation, written out by hand. Micro-steps 1..ACCUM-1 run
  under `no_sync()` outside the step; the last one runs forward, backward and value clipping
  inside `optimizer.step(closure)` (Lightning's `_wrap_closure` clips there), with an nll_loss.
* lbfgs: `torch.optim.LBFGS`, whose step calls the closure several times (max_iter=4).
* losses: one plain step per loss function of the probe's list, then a step whose loss is the
  sum of two of them (no single loss-function value is the loss).
"""

import contextlib
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from toy import make_model, save_params

ACCUM = 4
STEPS = 3
CLIP_VALUE = 0.05

mode = sys.argv[1]
distributed = "RANK" in __import__("os").environ
if distributed:
    dist.init_process_group("gloo")
rank = dist.get_rank() if distributed else 0
net = make_model()
model = DDP(net) if distributed else net
gen = torch.Generator().manual_seed(100 + rank)


def batch(n: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n, 8, generator=gen), torch.randint(0, 2, (n,), generator=gen)


def nll(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = model(x)
    logits = torch.cat([out, -out], dim=1)
    return F.nll_loss(F.log_softmax(logits, dim=1), y)


if mode == "closure":
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(STEPS):
        optimizer.zero_grad()
        for _ in range(ACCUM - 1):
            with model.no_sync() if distributed else contextlib.nullcontext():
                (nll(*batch()) / ACCUM).backward()
        x, y = batch()

        def closure(x: torch.Tensor = x, y: torch.Tensor = y) -> torch.Tensor:
            loss = nll(x, y) / ACCUM
            loss.backward()
            torch.nn.utils.clip_grad_value_(model.parameters(), clip_value=CLIP_VALUE)
            return loss

        optimizer.step(closure=closure)
elif mode == "lbfgs":
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4)
    for _ in range(STEPS):
        x, y = batch()

        def closure(x: torch.Tensor = x, y: torch.Tensor = y) -> torch.Tensor:
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y.float()[:, None])
            loss.backward()
            return loss

        optimizer.step(closure)
elif mode == "losses":
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    for name in ("nll", "mse", "bce_logits", "bce", "kl_div", "smooth_l1", "sum_of_two"):
        x, y = batch()
        out = model(x)
        target = y.float()[:, None]
        if name == "nll":
            loss = nll(x, y)
        elif name == "mse":
            loss = torch.nn.MSELoss()(out, target)
        elif name == "bce_logits":
            loss = F.binary_cross_entropy_with_logits(out, target)
        elif name == "bce":
            loss = F.binary_cross_entropy(torch.sigmoid(out), target)
        elif name == "kl_div":
            logp = F.log_softmax(torch.cat([out, -out], dim=1), dim=1)
            loss = F.kl_div(logp, torch.full_like(logp, 0.5), reduction="batchmean")
        elif name == "smooth_l1":
            loss = F.smooth_l1_loss(out, target, reduction="sum")
        else:
            loss = F.mse_loss(out, target) + F.l1_loss(out, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
else:
    raise SystemExit(f"unknown mode {mode}")

if rank == 0 and len(sys.argv) > 2:
    save_params(net, sys.argv[2])
if distributed:
    dist.destroy_process_group()
