"""Project mode, round 8 of issue #27 (fix8b): set-epoch-missing when a loader builder of another
file returns the loader over a shuffling DistributedSampler and the entry script loops the epochs
(hysts/pytorch_image_classification ``create_dataloader``, HigherHRNet ``make_dataloader``).
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found as _found
from tests.lint.project_facts import write_files as _write

BUILDER = """
    import torch
    import torch.distributed as dist


    def create_dataloader(config, dataset, val_dataset):
        if dist.is_initialized():
            train_sampler = torch.utils.data.distributed.DistributedSampler(dataset)
        else:
            train_sampler = torch.utils.data.RandomSampler(dataset)
        batches = torch.utils.data.sampler.BatchSampler(train_sampler, batch_size=config.bs, drop_last=True)
        train_loader = torch.utils.data.DataLoader(dataset, batch_sampler=batches)
        val_loader = torch.utils.data.DataLoader(val_dataset, batch_size=config.bs)
        return train_loader, val_loader
"""

TRAIN = """
    import torch
    from data.loaders import create_dataloader


    def train(epoch, model, optimizer, loader):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()


    def main(config, model, optimizer, dataset, val_dataset):
        train_loader, val_loader = create_dataloader(config, dataset, val_dataset)
        for epoch in range(config.epochs):
            train(epoch, model, optimizer, train_loader)
"""


def test_a_loader_returned_by_a_builder_and_looped_over_epochs_misses_set_epoch(tmp_path: Path) -> None:
    root = _write(tmp_path, {"data/__init__.py": "", "data/loaders.py": BUILDER, "train.py": TRAIN})
    assert ("set-epoch-missing", "train.py") in _found(root)


def test_set_epoch_in_the_entry_script_is_enough(tmp_path: Path) -> None:
    train = TRAIN.replace(
        "            train(epoch,",
        "            train_loader.batch_sampler.sampler.set_epoch(epoch)\n            train(epoch,",
    )
    root = _write(tmp_path, {"data/__init__.py": "", "data/loaders.py": BUILDER, "train.py": train})
    assert ("set-epoch-missing", "train.py") not in _found(root)


def test_set_epoch_in_the_trainer_the_loader_is_handed_to_is_enough(tmp_path: Path) -> None:
    trainer = """
        import torch


        def train(epoch, model, optimizer, loader):
            loader.batch_sampler.sampler.set_epoch(epoch)
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
    """
    train = """
        from data.loaders import create_dataloader
        from engine import train


        def main(config, model, optimizer, dataset, val_dataset):
            train_loader, val_loader = create_dataloader(config, dataset, val_dataset)
            for epoch in range(config.epochs):
                train(epoch, model, optimizer, train_loader)
    """
    files = {"data/__init__.py": "", "data/loaders.py": BUILDER, "engine.py": trainer, "train.py": train}
    assert ("set-epoch-missing", "train.py") not in _found(_write(tmp_path, files))


def test_the_unshuffled_loader_of_the_tuple_is_not_reported(tmp_path: Path) -> None:
    train = TRAIN.replace(
        "train(epoch, model, optimizer, train_loader)", "train(epoch, model, optimizer, val_loader)"
    )
    root = _write(tmp_path, {"data/__init__.py": "", "data/loaders.py": BUILDER, "train.py": train})
    assert ("set-epoch-missing", "train.py") not in _found(root)


def test_a_comment_naming_set_epoch_in_the_builder_is_not_a_call(tmp_path: Path) -> None:
    # round 10 (fix10c): the builder's "calls set_epoch" fact is read from its tree, not its text
    builder = BUILDER.replace(
        "        return train_loader, val_loader",
        "        # callers must call train_sampler.set_epoch(epoch)\n        return train_loader, val_loader",
    )
    root = _write(tmp_path, {"data/__init__.py": "", "data/loaders.py": builder, "train.py": TRAIN})
    assert ("set-epoch-missing", "train.py") in _found(root)


def test_a_builder_edited_between_two_runs_is_read_again(tmp_path: Path) -> None:
    # the facts live in each run's project index: no process-wide cache keyed by path can go stale
    files = {"data/__init__.py": "", "data/loaders.py": BUILDER, "train.py": TRAIN}
    assert ("set-epoch-missing", "train.py") in _found(_write(tmp_path, files))
    unshuffled = BUILDER.replace("DistributedSampler(dataset)", "DistributedSampler(dataset, shuffle=False)")
    assert ("set-epoch-missing", "train.py") not in _found(_write(tmp_path, {"data/loaders.py": unshuffled}))
    assert ("set-epoch-missing", "train.py") in _found(_write(tmp_path, {"data/loaders.py": BUILDER}))


# Round 16 (fix16c): the builder of another file builds the DistributedSampler inside the DataLoader
# call (``sampler=DistributedSampler(ds)``, no name), and the entry hands the loader to the
# constructor of a trainer class of its own file whose epoch method iterates ``self.train_ds``.
INLINE_BUILDER = """
    import torch
    from torch.utils.data.distributed import DistributedSampler


    def load_data(train_ds, test_ds, batch_size):
        train_dataset = torch.utils.data.DataLoader(
            dataset=train_ds, batch_size=batch_size, shuffle=False, sampler=DistributedSampler(train_ds)
        )
        test_dataset = torch.utils.data.DataLoader(
            dataset=test_ds, batch_size=batch_size, shuffle=False, sampler=DistributedSampler(test_ds, shuffle=False)
        )
        return train_dataset, test_dataset
"""

TRAINER_ENTRY = """
    import torch
    from data import dataloader


    class Trainer:
        def __init__(self, train_ds, test_ds, model, optimizer):
            self.train_ds = train_ds
            self.test_ds = test_ds
            self.model = torch.nn.parallel.DistributedDataParallel(model)
            self.optimizer = optimizer

        def train(self, epochs):
            for epoch in range(epochs):
                for idx, batch in enumerate(self.train_ds):
                    self.optimizer.zero_grad()
                    self.model(batch).mean().backward()
                    self.optimizer.step()


    def main(args, model, optimizer, a, b):
        train_ds, test_ds = dataloader.load_data(a, b, args.batch_size)
        trainer = Trainer(train_ds, test_ds, model, optimizer)
        trainer.train(args.epochs)
"""


def test_an_inline_sampler_of_a_builder_kept_by_a_trainer_class_misses_set_epoch(tmp_path: Path) -> None:
    files = {"data/__init__.py": "", "data/dataloader.py": INLINE_BUILDER, "train.py": TRAINER_ENTRY}
    assert ("set-epoch-missing", "train.py") in _found(_write(tmp_path, files))


def test_an_inline_sampler_without_shuffle_is_not_flagged(tmp_path: Path) -> None:
    builder = INLINE_BUILDER.replace(
        "sampler=DistributedSampler(train_ds)", "sampler=DistributedSampler(train_ds, shuffle=False)"
    )
    files = {"data/__init__.py": "", "data/dataloader.py": builder, "train.py": TRAINER_ENTRY}
    assert ("set-epoch-missing", "train.py") not in _found(_write(tmp_path, files))
