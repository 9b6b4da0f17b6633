"""Project mode, round 15 (fix15b): find-unused-true on a project subclass of DDP.

NATSpeech wraps its task in ``utils.commons.ddp_utils.DDP``, a ``DistributedDataParallel``
subclass that only overrides ``forward``, with ``find_unused_parameters=True`` written in
``utils/commons/trainer.py``. Constructing the subclass is the DDP wrap: the keyword is DDP's.
File mode sees only the file's own classes, so the trainer alone stays silent.
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found
from tests.lint.project_facts import write_files as _write

DDP_UTILS = """
from torch.nn.parallel import BASE


class DDP(BASE):
    def forward(self, *inputs, **kwargs):
        return self.module.training_step(*inputs, **kwargs)
"""

TRAINER = """
from utils.commons.ddp_utils import DDP


class Trainer:
    def configure_ddp(self, task):
        task = DDP(task, device_ids=[self.root_gpu], find_unused_parameters=True)
        return task
"""


def _project(tmp_path: Path, base: str) -> Path:
    return _write(
        tmp_path,
        {
            "utils/__init__.py": "",
            "utils/commons/__init__.py": "",
            "utils/commons/ddp_utils.py": DDP_UTILS.replace("BASE", base),
            "utils/commons/trainer.py": TRAINER,
        },
    )


def test_a_ddp_subclass_of_another_file_is_the_wrap_its_keyword_configures(tmp_path: Path) -> None:
    root = _project(tmp_path, "DistributedDataParallel")
    assert found(root) == {("find-unused-true", "utils/commons/trainer.py")}


def test_file_mode_knows_only_the_files_own_classes(tmp_path: Path) -> None:
    root = _project(tmp_path, "DistributedDataParallel")
    assert found(root, project=False) == set()


def test_a_subclass_of_another_class_is_no_ddp_wrap(tmp_path: Path) -> None:
    root = _project(tmp_path, "DataParallel")
    assert found(root) == set()
