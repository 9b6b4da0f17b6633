"""A DeepSpeed training loop as its documentation writes it (`deepspeed.initialize`, `engine(x)`,
`engine.backward(loss)`, `engine.step()`), on CPU: DS_ACCELERATOR=cpu, gloo, a tiny classifier.

    python -m torch.distributed.run --nproc_per_node 2 deepspeed_train.py STAGE PRECISION GAS STEPS [FAULT] [SAVE]

STAGE: 0-3, or e.g. 2+offload (offload_optimizer to the CPU).
PRECISION: fp32, bf16, fp16 (dynamic loss scale), fp16-static (a static loss scale of 2^24,
far too large: every step overflows; # fault: fp16-overflow).

FAULT: `none`, or `undivided`: `engine.backward(loss, scale_wrt_gas=False)`, the loss is not
divided by the accumulation count (# fault: accum-loss-unscaled); or `torch-style`: a correct
`loss.backward()` (fp16: `engine.scale(loss).backward()`) instead of engine.backward.
"""

import sys

import deepspeed
import deepspeed.ops
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler
from toy_classifier import BATCH, LR, make_dataset, make_model

# DeepSpeed's CPU accelerator JIT-compiles a shared-memory all-reduce op on first use (~1 minute,
# then cached): declaring no op compatible makes it use plain gloo collectives (same results).
deepspeed.ops.__compatible_ops__ = {}


def config(stage: str, precision: str, gas: int) -> dict:
    zero = {"stage": int(stage.split("+")[0])}
    if stage.endswith("+offload"):  # ZeRO-Offload: optimizer states and step on the CPU
        zero["offload_optimizer"] = {"device": "cpu"}
    cfg = {
        "train_micro_batch_size_per_gpu": BATCH,
        "gradient_accumulation_steps": gas,
        "gradient_clipping": 1.0,
        "zero_optimization": zero,
        "zero_force_ds_cpu_optimizer": False,  # offload with the client torch.optim.SGD (no JIT op)
        "steps_per_print": 10**9,
        "zero_allow_untested_optimizer": True,  # a client torch.optim.SGD under ZeRO
    }
    if precision == "fp16":
        cfg["fp16"] = {"enabled": True, "initial_scale_power": 8}
    elif precision == "fp16-static":  # a static loss scale far too large: every step overflows
        cfg["fp16"] = {"enabled": True, "loss_scale": 2.0**24}
    elif precision == "bf16":
        cfg["bf16"] = {"enabled": True}
    return cfg


def main() -> None:
    stage, precision, gas, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    fault = sys.argv[5] if len(sys.argv) > 5 else "none"
    deepspeed.init_distributed(dist_backend="gloo")
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    engine, _, _, _ = deepspeed.initialize(
        model=model, optimizer=optimizer, config=config(stage, precision, gas)
    )
    world = engine.dp_world_size
    dataset = make_dataset(BATCH * gas * steps * world)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler)
    dtype = {"fp16": torch.float16, "fp16-static": torch.float16, "bf16": torch.bfloat16}.get(
        precision, torch.float32
    )
    for x, y in loader:
        loss = F.cross_entropy(engine(x.to(dtype)).float(), y)
        if fault == "torch-style":  # loss.backward() on the engine's output (ZeRO >= 1 only)
            (engine.scale(loss) if precision.startswith("fp16") else loss).backward()
        else:
            engine.backward(loss, scale_wrt_gas=fault != "undivided")
        engine.step()
    if len(sys.argv) > 6 and engine.global_rank == 0:
        torch.save(
            {k: v.detach().float().clone() for k, v in engine.module.state_dict().items()}, sys.argv[6]
        )


if __name__ == "__main__":
    main()
