"""Project mode, round 12 (fix12c): an accumulation count that no caller sets is 1.

MetaICL's ``MetaICLModel.do_train(self, ..., gradient_accumulation_steps=1)`` steps under
``global_step % gradient_accumulation_steps == 0`` and ``train.py`` calls it without the count:
every pass steps, nothing accumulates, so no accumulation rule applies. A caller that passes a
count (by keyword or position), hands the method on (``partial``), or passes ``**kwargs`` keeps
the loop an accumulation loop; file mode, which sees no caller, keeps it too (config-gated).
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found, write_files

MODEL = """
    import torch
    from torch.nn.parallel import DistributedDataParallel

    class Trainer:
        def __init__(self, model, local_rank):
            self.model = DistributedDataParallel(model, device_ids=[local_rank])
            self.optimizer = torch.optim.AdamW(self.model.parameters())

        def do_train(self, loader, num_steps, gradient_accumulation_steps=1):
            global_step = 0
            for batch in loader:
                global_step += 1
                loss = self.model(batch).mean()
                loss.backward()
                if global_step % gradient_accumulation_steps == 0:
                    self.optimizer.step()
                    self.model.zero_grad()
"""

CALLER = """
    from model import Trainer

    def main(model, loader, args):
        trainer = Trainer(model, args.local_rank)
        trainer.do_train(loader, args.num_steps{extra})
"""

RULES = {"accum-no-sync-missing", "accum-loss-unscaled"}


def _rules(root: Path, extra: str, project: bool = True) -> set[str]:
    files = {"model.py": MODEL, "train.py": CALLER.format(extra=extra)}
    return {rule for rule, _ in found(write_files(root, files), project)} & RULES


def test_count_no_caller_sets_is_one(tmp_path: Path) -> None:
    assert _rules(tmp_path, "") == set()


def test_count_passed_by_keyword_or_position_accumulates(tmp_path: Path) -> None:
    assert _rules(tmp_path / "kw", ", gradient_accumulation_steps=args.accum") == RULES
    assert _rules(tmp_path / "pos", ", args.accum") == RULES
    assert _rules(tmp_path / "star", ", **args.kwargs") == RULES


def test_file_mode_sees_no_caller(tmp_path: Path) -> None:
    assert _rules(tmp_path, "", project=False) == RULES
