"""Project mode, round 12 (fix12c): a GradScaler held by a project class scales where it is built.

4M's ``fourm/utils/native_scaler.py`` defines ``NativeScalerWithGradNormCount`` (a GradScaler in
its ``__init__``), re-exported by ``fourm/utils/__init__.py``. The DDP trainer builds one; the FSDP
trainer imports the same package but builds none and autocasts in float16 for ``--dtype float16``.
The module defining the class is no scaler of its importers: the trainer that instantiates it is.
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found, write_files

SCALER = """
    import torch

    class NativeScaler:
        def __init__(self, enabled=True):
            self._scaler = torch.cuda.amp.GradScaler(enabled=enabled)

        def __call__(self, loss, optimizer):
            self._scaler.scale(loss).backward()
            self._scaler.step(optimizer)
            self._scaler.update()
"""

TRAINER = """
    import torch
    import utils
    {imports}

    def train(model, loader, optimizer):
        {body}
        for x in loader:
            with torch.cuda.amp.autocast(dtype=torch.float16):
                loss = model(x)
            {backward}
"""


def _fp16(root: Path, imports: str, body: str, backward: str) -> set[str]:
    files = {
        "utils/__init__.py": "from .native_scaler import NativeScaler\n",
        "utils/native_scaler.py": SCALER,
        "train.py": TRAINER.format(imports=imports, body=body, backward=backward),
    }
    return {path for rule, path in found(write_files(root, files)) if rule == "fp16-no-scaler"}


def test_a_scaler_class_imported_but_never_built_scales_nothing(tmp_path: Path) -> None:
    assert _fp16(tmp_path, "", "pass", "loss.backward()") == {"train.py"}


def test_the_trainer_that_builds_the_scaler_is_scaled(tmp_path: Path) -> None:
    built = _fp16(
        tmp_path, "from utils import NativeScaler", "scaler = NativeScaler()", "scaler(loss, optimizer)"
    )
    assert built == set()


def test_a_module_level_grad_scaler_still_covers_its_importers(tmp_path: Path) -> None:
    files = {
        "utils/__init__.py": "import torch\nscaler = torch.cuda.amp.GradScaler()\n",
        "train.py": TRAINER.format(imports="", body="pass", backward="utils.scaler.scale(loss).backward()"),
    }
    assert {p for r, p in found(write_files(tmp_path, files)) if r == "fp16-no-scaler"} == set()
