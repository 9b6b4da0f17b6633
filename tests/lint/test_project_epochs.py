"""Project mode: a DistributedSampler built in the entry script, the epochs looped by a trainer
class in another file (neuralop: ``trainer.train(train_loader=...)`` and ``for epoch in ...:
self.train_one_epoch(epoch, train_loader)``); no ``set_epoch`` on either side."""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found, write_files

TRAINER = """
    class Trainer:
        def __init__(self, model, n_epochs):
            self.model = model
            self.n_epochs = n_epochs

        def train(self, train_loader, optimizer):
            print(f"training on {len(train_loader)} batches")
            for epoch in range(self.n_epochs):
                self.train_one_epoch(epoch, train_loader, optimizer)

        def train_one_epoch(self, epoch, train_loader, optimizer):
            for batch in train_loader:
                loss = self.model(batch).mean()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
"""

ENTRY = """
    import torch
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, DistributedSampler
    from trainer import Trainer

    def main(model, dataset):
        torch.distributed.init_process_group("nccl")
        model = DistributedDataParallel(model)
        sampler = DistributedSampler(dataset)
        train_loader = DataLoader(dataset, batch_size=8, sampler=sampler)
        optimizer = torch.optim.AdamW(model.parameters())
        trainer = Trainer(model, n_epochs=10)
        trainer.train(train_loader=train_loader, optimizer=optimizer)
"""


def _found(root: Path, files: dict[str, str], project: bool = True) -> set[tuple[str, str]]:
    return found(write_files(root, files), project)


def test_sampler_handed_to_a_trainer_that_loops_the_epochs_in_another_file(tmp_path: Path) -> None:
    found = _found(tmp_path, {"trainer.py": TRAINER, "train.py": ENTRY})
    assert ("set-epoch-missing", "train.py") in found


def test_the_trainer_calls_set_epoch_itself(tmp_path: Path) -> None:
    trainer = TRAINER.replace(
        "            for epoch in range(self.n_epochs):\n",
        "            for epoch in range(self.n_epochs):\n                train_loader.sampler.set_epoch(epoch)\n",
    )
    found = _found(tmp_path, {"trainer.py": trainer, "train.py": ENTRY})
    assert ("set-epoch-missing", "train.py") not in found


def test_a_trainer_that_reads_the_loader_once_is_a_single_pass(tmp_path: Path) -> None:
    trainer = TRAINER.replace(
        "            for epoch in range(self.n_epochs):\n                self.train_one_epoch(epoch, train_loader, optimizer)\n",
        "            self.train_one_epoch(0, train_loader, optimizer)\n",
    )
    found = _found(tmp_path, {"trainer.py": trainer, "train.py": ENTRY})
    assert ("set-epoch-missing", "train.py") not in found


def test_file_mode_cannot_see_the_epoch_loop(tmp_path: Path) -> None:
    found = _found(tmp_path, {"trainer.py": TRAINER, "train.py": ENTRY}, project=False)
    assert ("set-epoch-missing", "train.py") not in found


SINGLE_PASS_TRAIN = """
    def train(train_loader, model, optimizer, num_per_epoch):
        epoch = 0
        for idx, batch in enumerate(train_loader):
            epoch = idx // num_per_epoch  # the dataset is sized for every epoch: one pass
            loss = model(batch).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
"""

SINGLE_PASS_ENTRY = """
    import torch
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, DistributedSampler
    from loop import train

    def main(model, dataset):
        torch.distributed.init_process_group("nccl")
        model = DistributedDataParallel(model)
        train_loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
        optimizer = torch.optim.AdamW(model.parameters())
        train(train_loader, model, optimizer, 100)
"""


def test_one_pass_whose_loop_header_enumerates_the_loader_is_not_an_epoch_loop(tmp_path: Path) -> None:
    # pysot: `for idx, data in enumerate(train_loader)` iterates once; the header's enumerate(...)
    # call is not a call "inside" that loop
    found = _found(tmp_path, {"loop.py": SINGLE_PASS_TRAIN, "train.py": SINGLE_PASS_ENTRY})
    assert ("set-epoch-missing", "train.py") not in found


def test_the_same_loader_handed_on_inside_an_epoch_loop_is_still_found(tmp_path: Path) -> None:
    looped = SINGLE_PASS_TRAIN.replace(
        "def train(train_loader, model, optimizer, num_per_epoch):",
        "def train(train_loader, model, optimizer, num_per_epoch):\n        for e in range(3):\n            run(enumerate(train_loader))\n\n    def run(batches):\n        pass\n\n    def unused(train_loader, model, optimizer, num_per_epoch):",
    )
    found = _found(tmp_path, {"loop.py": looped, "train.py": SINGLE_PASS_ENTRY})
    assert ("set-epoch-missing", "train.py") in found


# a module of two entry points: the first sets its sampler's epoch, the second, the one the script
# calls, never does (nor does anything it runs)
TWO_ENTRIES = """
    def pretrain_small(model, loader, optimizer, epochs):
        for epoch in range(epochs):
            loader.sampler.set_epoch(epoch)
            for batch in loader:
                model(batch).mean().backward()
                optimizer.step()

    def pretrain_large(model, loader, optimizer, epochs):
        for epoch in range(epochs):
            for batch in loader:
                model(batch).mean().backward()
                optimizer.step()
"""

TWO_ENTRIES_SCRIPT = """
    import torch
    from torch.utils.data import DataLoader, DistributedSampler
    from pretrain import pretrain_large

    def main(model, dataset):
        sampler = DistributedSampler(dataset, shuffle=True)
        loader = DataLoader(dataset, batch_size=8, sampler=sampler)
        pretrain_large(model, loader, torch.optim.AdamW(model.parameters()), 10)
"""


def test_a_set_epoch_in_another_entry_point_of_the_module_does_not_count(tmp_path: Path) -> None:
    found = _found(tmp_path, {"pretrain.py": TWO_ENTRIES, "train.py": TWO_ENTRIES_SCRIPT})
    assert ("set-epoch-missing", "train.py") in found


def test_a_set_epoch_in_a_helper_the_entry_point_runs_counts(tmp_path: Path) -> None:
    runs_it = TWO_ENTRIES.replace(
        "            for batch in loader:\n                model(batch).mean().backward()\n                optimizer.step()\n\n    def pretrain_large",
        "            for batch in loader:\n                model(batch).mean().backward()\n                optimizer.step()\n\n    def start(loader, epoch):\n        loader.sampler.set_epoch(epoch)\n\n    def pretrain_large",
    ).replace(
        "        for epoch in range(epochs):\n            for batch in loader:",
        "        for epoch in range(epochs):\n            start(loader, epoch)\n            for batch in loader:",
    )
    assert "start(loader, epoch)" in runs_it
    found = _found(tmp_path, {"pretrain.py": runs_it, "train.py": TWO_ENTRIES_SCRIPT})
    assert ("set-epoch-missing", "train.py") not in found
