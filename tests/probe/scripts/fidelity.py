"""User-style DDP/FSDP2 training cases, run bare and under the probe; each rank writes a digest
of every case's final state_dict (parameters AND buffers) and the number of
`torch.distributed.all_reduce` calls the script saw (tests/probe/test_fidelity.py).

    fidelity.py OUT_DIR CASE[,CASE...]

Cases (one fresh model each, several SGD/Adam steps, gloo CPU):
  plain        DDP, SGD
  accum        DDP, accumulation of 3 micro-steps through no_sync(), Adam
  join         DDP under Join with uneven inputs, divide_by_initial_world_size=False
  gabv         DDP gradient_as_bucket_view=True, static_graph=True, small buckets, Adam
  hook_before  a user comm hook (counting, then allreduce_hook) registered before the first backward
  hook_after   the same hook registered after the first backward (valid torch)
  batchnorm    DDP of a BatchNorm model, buffers broadcast
  compile      torch.compile(DDP(bn model)) and DDP(torch.compile(bn model)), backend from
               FIDELITY_BACKEND (default eager)
  fsdp2        fully_shard, accumulation through set_requires_gradient_sync
"""

import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 4
ALL_REDUCE_CALLS = 0
_all_reduce = dist.all_reduce


def counting_all_reduce(*args, **kwargs):
    """What a script that wraps all_reduce sees: the probe must not add calls."""
    global ALL_REDUCE_CALLS
    ALL_REDUCE_CALLS += 1
    return _all_reduce(*args, **kwargs)


dist.all_reduce = counting_all_reduce


def digest(module):
    h = hashlib.sha256()
    for name, t in sorted(module.state_dict().items()):
        t = t.to_local() if hasattr(t, "to_local") else t
        t = t.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def mlp(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.Tanh(), torch.nn.Linear(32, 3))


def bn_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(12, 32),
        torch.nn.BatchNorm1d(32),
        torch.nn.ReLU(),
        torch.nn.Dropout(0.1),
        torch.nn.Linear(32, 3),
    )


def batch(step, micro=0, n=6):
    g = torch.Generator().manual_seed(1000 * dist.get_rank() + 10 * step + micro)
    return torch.randn(n, 12, generator=g), torch.randn(n, 3, generator=g)


def train(model, opt, steps=STEPS, accum=1):
    for step in range(steps):
        for micro in range(accum):
            x, y = batch(step, micro)
            sync = micro == accum - 1
            ctx = contextlib.nullcontext() if sync else model.no_sync()
            with ctx:
                loss = F.mse_loss(model(x), y) / accum
                loss.backward()
        opt.step()
        opt.zero_grad()
    return model


def counting_hook(state, bucket):
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    state["calls"] += 1
    return allreduce_hook(dist.group.WORLD, bucket)


def case_plain():
    model = DDP(mlp())
    return train(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)).module


def case_accum():
    model = DDP(mlp())
    return train(model, torch.optim.Adam(model.parameters(), lr=1e-2), accum=3).module


def case_join():
    from torch.distributed.algorithms.join import Join

    model = DDP(mlp())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Join([model], divide_by_initial_world_size=False):
        for step in range(2 + 2 * dist.get_rank()):  # uneven: rank r runs 2 + 2r steps
            x, y = batch(step)
            F.mse_loss(model(x), y).backward()
            opt.step()
            opt.zero_grad()
    return model.module


def case_gabv():
    model = DDP(mlp(), gradient_as_bucket_view=True, static_graph=True, bucket_cap_mb=0.001)
    return train(model, torch.optim.Adam(model.parameters(), lr=1e-2)).module


def _hooked(after_first_backward):
    model = DDP(mlp())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    state = {"calls": 0}
    if not after_first_backward:
        model.register_comm_hook(state, counting_hook)
    for step in range(STEPS):
        x, y = batch(step)
        F.mse_loss(model(x), y).backward()
        if after_first_backward and step == 0:
            model.register_comm_hook(state, counting_hook)
        opt.step()
        opt.zero_grad()
    return model.module, state["calls"]


def case_hook_before():
    module, calls = _hooked(False)
    return module, {"hook_calls": calls}


def case_hook_after():
    module, calls = _hooked(True)
    return module, {"hook_calls": calls}


def case_batchnorm():
    model = DDP(bn_model())
    train(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    model.eval()
    with torch.no_grad():
        out = model.module(batch(99)[0])
    return model.module, {"eval_out": hashlib.sha256(out.numpy().tobytes()).hexdigest()}


def case_compile():
    backend = os.environ.get("FIDELITY_BACKEND", "eager")
    outer = DDP(bn_model())
    compiled_outer = torch.compile(outer, backend=backend)
    opt = torch.optim.Adam(outer.parameters(), lr=1e-2)
    for step in range(STEPS):
        x, y = batch(step)
        F.mse_loss(compiled_outer(x), y).backward()
        opt.step()
        opt.zero_grad()
    del opt  # one optimizer at a time: the probe follows the first live one
    inner = DDP(torch.compile(bn_model(1), backend=backend))
    train(inner, torch.optim.SGD(inner.parameters(), lr=0.1))
    return outer.module, {"inner": digest(inner.module)}


def case_fsdp2():
    from torch.distributed.fsdp import fully_shard

    model = mlp()
    fully_shard(model[0])
    fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        for micro in range(2):
            model.set_requires_gradient_sync(micro == 1)
            x, y = batch(step, micro)
            (F.mse_loss(model(x), y) / 2).backward()
        opt.step()
        opt.zero_grad()
    return model


def main():
    out, cases = Path(sys.argv[1]), sys.argv[2].split(",")
    dist.init_process_group("gloo")
    result = {}
    for name in cases:
        before = ALL_REDUCE_CALLS
        got = globals()[f"case_{name}"]()
        module, extra = got if isinstance(got, tuple) else (got, {})
        result[name] = {"digest": digest(module), "all_reduce_calls": ALL_REDUCE_CALLS - before, **extra}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"rank{dist.get_rank()}.json").write_text(json.dumps(result, indent=1, sort_keys=True))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
