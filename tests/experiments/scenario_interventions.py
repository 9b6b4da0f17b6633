"""Run inside a fresh process: apply DDP_DOCTOR_SET, exercise torch, print what was observed as JSON.

Usage: python scenario_interventions.py NAME  (with DDP_DOCTOR_SET in the environment).
Each scenario observes the effect the intervention claims, through torch's public API only.
"""

import json
import sys

from ddp_doctor.probe.interventions import EFFECTS, apply_from_env

result = apply_from_env()

import torch  # noqa: E402  (after apply_from_env on purpose: the probe applies at torch import)


def optimizers() -> dict:
    model = torch.nn.Linear(4, 2)
    adam = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-8, betas=(0.8, 0.999))
    adamw = torch.optim.AdamW(model.parameters(), lr=1e-3)
    compiled = torch.compile(model)

    @torch.compile(mode="reduce-overhead")
    def double(x):
        return 2 * x

    model.compile()
    return {
        "adam_group": {"eps": adam.param_groups[0]["eps"], "betas": list(adam.param_groups[0]["betas"])},
        "adamw_group": {"eps": adamw.param_groups[0]["eps"], "betas": list(adamw.param_groups[0]["betas"])},
        "compile_identity": compiled is model,
        "decorator_identity": double.__name__ == "double"
        and not hasattr(double, "_torchdynamo_orig_callable"),
        "forward_is_eager": type(model.forward).__name__ == "method",
    }


def lr_and_clip() -> dict:
    model = torch.nn.Linear(4, 1, bias=False)
    with torch.no_grad():
        model.weight.zero_()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 1.0)
    updates, lrs_after = [], []
    for _ in range(4):
        opt.zero_grad()
        model.weight.grad = torch.full_like(model.weight, 10.0)  # norm 20
        before = model.weight.detach().clone()
        opt.step()
        sched.step()
        updates.append(float((model.weight.detach() - before).norm()))
        lrs_after.append(opt.param_groups[0]["lr"])
    return {"update_norms": updates, "lr_after_step": lrs_after}


def ddp() -> dict:
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        module = torch.nn.parallel.DistributedDataParallel(
            torch.nn.Linear(4, 2), bucket_cap_mb=25, find_unused_parameters=True
        )
        return {
            "bucket_bytes_cap": module.bucket_bytes_cap,
            "find_unused_parameters": module.find_unused_parameters,
        }
    finally:
        dist.destroy_process_group()


def zero() -> dict:
    import torch.distributed as dist
    from torch.distributed.optim import ZeroRedundancyOptimizer

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        model = torch.nn.Linear(4, 1, bias=False)
        with torch.no_grad():
            model.weight.zero_()
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD, lr=1.0)
        model.weight.grad = torch.full_like(model.weight, 10.0)  # norm 20
        opt.step()
        return {"update_norm": float(model.weight.detach().norm()), "lr_after": opt.param_groups[0]["lr"]}
    finally:
        dist.destroy_process_group()


def sampler() -> dict:
    from torch.utils.data.distributed import DistributedSampler

    def make():
        return DistributedSampler(range(64), num_replicas=2, rank=0, shuffle=True, seed=0)

    s = make()
    epochs = [list(s) for _ in range(3)]
    s.set_epoch(7)
    explicit = list(s)
    fresh = make()
    fresh.set_epoch(7)
    return {
        "orders_distinct": len({tuple(e) for e in epochs}) == 3,
        "explicit_epoch_kept": explicit == list(fresh) and s.epoch == 7,
    }


def seed() -> dict:
    torch.manual_seed(1234)  # what a script that seeds itself does
    return {"draw": torch.rand(3).tolist()}


SCENARIOS = {
    "optimizers": optimizers,
    "lr_and_clip": lr_and_clip,
    "ddp": ddp,
    "zero": zero,
    "sampler": sampler,
    "seed": seed,
}

observed = SCENARIOS[sys.argv[1]]()
print(json.dumps({"result": result, "observed": observed, "effects": dict(EFFECTS)}, default=str))
