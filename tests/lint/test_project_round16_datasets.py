"""Project mode, round 16 of issue #27 (fix16c): sampler-missing and a dataset class of another file
that decides what each rank reads.

DataLoader refuses a sampler for an IterableDataset (the dataset yields its own order), and a dataset
class whose methods read the rank and the world size (``__iter__`` keeping every world_size-th
element) is sharded by rank: a sampler-free DataLoader over either is right. A map-style dataset class
of another file that reads neither still needs the DistributedSampler.
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found as _found
from tests.lint.project_facts import write_files as _write

STREAMING = """
    import torch.distributed as dist
    from torch.utils.data import IterableDataset


    class StreamingDataset(IterableDataset):
        def __init__(self, elements, fn):
            super().__init__()
            self.elements = elements
            self.fn = fn

        def __iter__(self):
            num_replicas = dist.get_world_size()
            rank = dist.get_rank()
            for i, element in enumerate(self.elements):
                if i % num_replicas == rank:
                    yield self.fn(element)
"""

PLAIN = """
    from torch.utils.data import Dataset


    class StreamingDataset(Dataset):
        def __init__(self, elements, fn):
            self.elements = elements
            self.fn = fn

        def __len__(self):
            return len(self.elements)

        def __getitem__(self, i):
            return self.fn(self.elements[i])
"""

TRAIN = """
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader
    from utils.util import StreamingDataset


    def train(model, optimizer, elements, fn, local_rank):
        model = DDP(model, device_ids=[local_rank])
        train_dataset = StreamingDataset(elements, fn)
        train_dataloader = DataLoader(train_dataset, batch_size=8)
        for batch in train_dataloader:
            optimizer.zero_grad()
            model(batch).mean().backward()
            optimizer.step()
"""


def test_an_iterable_dataset_class_of_another_file_needs_no_sampler(tmp_path: Path) -> None:
    root = _write(tmp_path, {"utils/__init__.py": "", "utils/util.py": STREAMING, "train.py": TRAIN})
    assert ("sampler-missing", "train.py") not in _found(root)


def test_a_dataset_class_reading_rank_and_world_needs_no_sampler(tmp_path: Path) -> None:
    mapped = STREAMING.replace("IterableDataset", "Dataset")
    root = _write(tmp_path, {"utils/__init__.py": "", "utils/util.py": mapped, "train.py": TRAIN})
    assert ("sampler-missing", "train.py") not in _found(root)


def test_a_map_style_dataset_class_of_another_file_still_needs_a_sampler(tmp_path: Path) -> None:
    root = _write(tmp_path, {"utils/__init__.py": "", "utils/util.py": PLAIN, "train.py": TRAIN})
    assert ("sampler-missing", "train.py") in _found(root)
