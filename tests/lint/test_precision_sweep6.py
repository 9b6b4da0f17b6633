"""Project-mode precision cases from the round-6 precision sweep (docs/lint.md, "Round 6: precision
sweep"): facts of one file must not make claims about another file's process, and what a project
helper does (reduce, backprop) is read from its summary."""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found, write_files


def _found(root: Path, files: dict[str, str], project: bool = True) -> set[tuple[str, str]]:
    return found(write_files(root, files), project)


DDP_SCRIPT = """
    import argparse
    import torch
    from torch.utils.data import DataLoader, RandomSampler
    from torch.utils.data.distributed import DistributedSampler
    from torch.nn.parallel import DistributedDataParallel as DDP

    def main(model, data, optimizer):
        parser = argparse.ArgumentParser()
        parser.add_argument("--local_rank", type=int, default=-1)
        parser.add_argument("--gradient_accumulation_steps", type=int, default=1)
        args = parser.parse_args()
        torch.distributed.init_process_group("nccl")
        model = DDP(model)
        sampler = DistributedSampler(data)
        loader = DataLoader(data, sampler=sampler, batch_size=8)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for step, (x, y) in enumerate(loader):
                loss = model(x, y) / args.gradient_accumulation_steps
                loss.backward()
                if (step + 1) % args.gradient_accumulation_steps == 0:
                    optimizer.step()
                    optimizer.zero_grad()
"""

SINGLE_SCRIPT = """
    import argparse
    import torch
    from torch.utils.data import DataLoader, RandomSampler
    from torch.utils.data.distributed import DistributedSampler  # imported, never used

    def main(model, data, optimizer):
        parser = argparse.ArgumentParser()
        parser.add_argument("--gradient_accumulation_steps", type=int, default=1)
        args = parser.parse_args()
        if torch.cuda.device_count() > 1:
            model = torch.nn.DataParallel(model)
        loader = DataLoader(data, sampler=RandomSampler(data), batch_size=8)
        for epoch in range(3):
            for step, (x, y) in enumerate(loader):
                loss = model(x, y).mean() / args.gradient_accumulation_steps
                loss.backward()
                if (step + 1) % args.gradient_accumulation_steps == 0:
                    optimizer.step()
                    optimizer.zero_grad()
"""


def test_single_process_scripts_beside_a_ddp_script_stay_single_process(tmp_path: Path) -> None:
    # UniXcoder: code-completion wraps DDP; code-generation and clone-detection only DataParallel
    found = _found(tmp_path, {"completion/run.py": DDP_SCRIPT, "generation/run.py": SINGLE_SCRIPT})
    assert found == {("accum-no-sync-missing", "completion/run.py")}


TRAIN_LOGGING_QUIET = """
    import logging
    import torch

    logger = logging.getLogger(__name__)

    def main(args, model, loader, optimizer):
        logging.basicConfig(level=logging.INFO if args.local_rank in [-1, 0] else logging.WARN)
        model = torch.nn.parallel.DistributedDataParallel(model)
        for step, (x, y) in enumerate(loader):
            loss = model(x, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            logger.info("loss %s", loss.item())
"""

TRAIN_LOGGING_EVERYWHERE = TRAIN_LOGGING_QUIET.replace(
    "level=logging.INFO if args.local_rank in [-1, 0] else logging.WARN", "level=logging.INFO"
)


def test_a_sibling_scripts_logging_setup_does_not_silence_this_one(tmp_path: Path) -> None:
    # CodeBERT: codesearch silences non-zero ranks; code2nl configures INFO on every rank
    found = _found(
        tmp_path, {"search/run.py": TRAIN_LOGGING_QUIET, "code2nl/run.py": TRAIN_LOGGING_EVERYWHERE}
    )
    assert found == {("rank0-only-loss-log", "search/run.py")}


DIST_HELPERS = """
    import torch
    import torch.distributed as dist

    def dist_mean(x):
        tensor = torch.tensor(x).cuda()
        dist.all_reduce(tensor, op=dist.ReduceOp.AVG)
        return tensor

    def dist_mean_dict(x):
        return {k: dist_mean(v).item() for k, v in x.items()}

    def flatten_dict(x):
        return dict(x)

    def get_is_master():
        return dist.get_rank() == 0
"""

TRAIN_REDUCED = """
    import torch
    from lib.distributed import dist_mean_dict, flatten_dict, get_is_master

    def train(model, loader, optimizer, metric_logger):
        model = torch.nn.parallel.DistributedDataParallel(model)
        for x, y in loader:
            loss = model(x, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            metrics = flatten_dict({"lr": optimizer.param_groups[0]["lr"]})
            metrics.update(dist_mean_dict({"loss": loss.item()}))
            if get_is_master():
                metric_logger.log(metrics)
"""


def test_a_project_helper_that_all_reduces_through_another_helper(tmp_path: Path) -> None:
    # lingua: ``metrics.update(dist_mean_dict(to_sync))`` in apps/*/train.py, the helpers in lingua/
    files = {"lib/__init__.py": "", "lib/distributed.py": DIST_HELPERS, "apps/train.py": TRAIN_REDUCED}
    assert _found(tmp_path, files) == set()
    local = TRAIN_REDUCED.replace("metrics.update(dist_mean_dict(", "metrics.update(flatten_dict(")
    assert _found(tmp_path / "local", {**files, "apps/train.py": local}) == {
        ("rank0-only-loss-log", "apps/train.py")
    }


ENGINE = """
    import torch

    def train_one_epoch(model, loader, optimizer):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    @torch.no_grad()
    def evaluate(model, loader):
        return sum((model(x).argmax(-1) == y).sum().item() for x, y in loader)
"""

ENTRY = """
    import torch
    from engine import {call}

    def main(model, loader):
        model = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        {call}(model, loader{extra})

    if __name__ == "__main__":
        main(None, None)
"""


def test_find_unused_in_an_entry_script_that_only_evaluates(tmp_path: Path) -> None:
    # AutoFormerV2 evaluation.py (evaluate from the engine) against supernet_train.py (train_one_epoch)
    files = {
        "engine.py": ENGINE,
        "evaluation.py": ENTRY.format(call="evaluate", extra=""),
        "train.py": ENTRY.format(call="train_one_epoch", extra=", optimizer"),
    }
    assert _found(tmp_path, files) == {("find-unused-true", "train.py")}


def test_an_entry_script_that_spawns_a_project_worker_trains(tmp_path: Path) -> None:
    # the backward is in the worker another module defines; the script only hands it to spawn
    worker = (
        ENGINE
        + """
    def worker(rank, model, loader):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        train_one_epoch(model, loader, optimizer)
    """
    )
    entry = """
        import torch
        import torch.multiprocessing as mp
        from engine import worker

        def main(model, loader):
            model = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
            mp.spawn(worker, args=(model, loader), nprocs=2)

        if __name__ == "__main__":
            main(None, None)
    """
    assert _found(tmp_path, {"engine.py": worker, "launch.py": entry}) == {("find-unused-true", "launch.py")}
