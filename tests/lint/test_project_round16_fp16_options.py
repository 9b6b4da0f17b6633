"""Project mode, round 16 (fix16d): float16 weights cast by a project helper, under an option value
the GradScaler is not built for.

Chinese-CLIP's ``main.py`` calls ``convert_weights(model)`` (``cn_clip/clip/model.py``: ``model.apply``
of a def doing ``l.weight.data = l.weight.data.half()``) under ``if args.precision == "fp16":`` and
builds ``GradScaler() if args.precision == "amp" else None``; ``train.py`` backprops
``scaler.scale(loss)`` when handed a scaler, a plain ``loss.backward()`` otherwise.
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found_gated, write_files

MODEL = """
    import torch.nn as nn

    def convert_weights(model):
        def _to_fp16(layer):
            if isinstance(layer, (nn.Conv2d, nn.Linear)):
                layer.weight.data = layer.weight.data.half()

        model.apply(_to_fp16)
"""

TRAIN = """
    def train(model, loader, optimizer, scaler):
        for x in loader:
            loss = model(x).mean()
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
"""

MAIN = """
    import torch
    from torch.cuda.amp import GradScaler
    from torch.nn.parallel import DistributedDataParallel as DDP
    from model import convert_weights
    from train import train

    def main(args, model, loader):
        if args.precision == "fp16":
            convert_weights(model)
        model = DDP(model)
        optimizer = torch.optim.AdamW(model.parameters())
        scaler = GradScaler() if args.precision in {scaled} else None
        train(model, loader, optimizer, scaler)
"""


def _fp16(root: Path, scaled: str) -> set[tuple[str, str | None]]:
    files = {"model.py": MODEL, "train.py": TRAIN, "main.py": MAIN.format(scaled=scaled)}
    return {
        (path, gate) for rule, path, gate in found_gated(write_files(root, files)) if rule == "fp16-no-scaler"
    }


def test_weights_cast_by_a_helper_for_an_unscaled_precision(tmp_path: Path) -> None:
    assert _fp16(tmp_path, '("amp",)') == {("main.py", "precision == 'fp16'")}


def test_the_scaler_covers_the_float16_precision(tmp_path: Path) -> None:
    assert _fp16(tmp_path, '("amp", "fp16")') == set()


FACTORY = """
    import torch.nn as nn
    from model import convert_weights

    def create_model(name, precision="fp32"):
        model = nn.Linear(4, 4)
        if precision == "fp16":
            convert_weights(model)
        return model
"""

MAIN_FACTORY = """
    import torch
    from torch.cuda.amp import GradScaler
    from torch.nn.parallel import DistributedDataParallel as DDP
    from factory import create_model
    from train import train

    def main(args, loader):
        model = create_model(args.name, precision=args.precision)
        model = DDP(model)
        optimizer = torch.optim.AdamW(model.parameters())
        scaler = GradScaler() if args.precision in {scaled} else None
        train(model, loader, optimizer, scaler)
"""


def _factory(root: Path, scaled: str) -> set[tuple[str, str | None]]:
    files = {
        "model.py": MODEL,
        "factory.py": FACTORY,
        "train.py": TRAIN,
        "main.py": MAIN_FACTORY.format(scaled=scaled),
    }
    return {
        (path, gate) for rule, path, gate in found_gated(write_files(root, files)) if rule == "fp16-no-scaler"
    }


def test_a_factory_returns_weights_cast_for_an_unscaled_precision(tmp_path: Path) -> None:
    assert _factory(tmp_path, '("amp",)') == {("main.py", "precision == 'fp16'")}


def test_the_scaler_covers_the_factory_float16_precision(tmp_path: Path) -> None:
    assert _factory(tmp_path, '("amp", "fp16")') == set()
