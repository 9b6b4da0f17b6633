"""A W&B offline run the way HF's WandbCallback logs: train/* keys and train/global_step (from 1).

Usage: python wandb_offline_run.py DIR   (WANDB_MODE=offline in the environment)
Loss spike at global_step 121 (index 120), NaN loss at global_step 181 (index 180).
"""

import math
import sys

import wandb

run = wandb.init(project="ddp-doctor-test", dir=sys.argv[1], config={"lr": 1e-3})
for step in range(1, 201):
    loss = 2.0 + 3.0 * math.exp(-step / 60) + 0.01 * math.sin(step * 1.7)
    if step == 121:
        loss *= 3
    if step == 181:
        loss = float("nan")
    wandb.log(
        {
            "train/loss": loss,
            "train/learning_rate": 1e-3 * min(1.0, step / 10),
            "train/grad_norm": 1.5 + 0.02 * math.cos(step),
            "train/epoch": step / 200,
            "train/global_step": step,
        }
    )
run.finish()
