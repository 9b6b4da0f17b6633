"""`python -m ddp_doctor.trainer [flags]`: DDP under torchrun, a single process otherwise."""

from __future__ import annotations

import os
import sys

from ddp_doctor.trainer.config import config_from_argv


def main(argv: list[str] | None = None) -> int:
    cfg = config_from_argv(argv)
    import torch
    import torch.distributed as dist

    from ddp_doctor.trainer.loop import train
    from ddp_doctor.trainer.summary import print_summary

    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(backend)
    try:
        result = train(cfg)
        if result.state.rank == 0:
            print_summary(cfg, result)
    finally:
        if distributed:
            dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
