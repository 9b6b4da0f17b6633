"""Project mode, round 10 of issue #27 (fix10a): false alarms of the round-10 precision sweep
(docs/lint-sweep-10.md), fixed at their roots.
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found as _found
from tests.lint.project_facts import write_files as _write

# ml-mdm: a step function that backprops on every call and steps only when told the micro-batch
# is the last; its caller in another file decides which calls run under ``no_sync``.
STEP = """
    def train_batch(model, sample, optimizer, accumulate_gradient=False, num_grad_accumulations=1):
        loss = model(sample).mean() / num_grad_accumulations
        loss.backward()
        if not accumulate_gradient:
            optimizer.step()
            optimizer.zero_grad()
        return loss.item()
"""


def _main(call: str) -> str:
    return f"""
    from contextlib import nullcontext
    import torch
    import trainer

    def main(model, loader, optimizer, accum, local_rank):
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
        counter = 0
        for sample in loader:
            counter = (counter + 1) % accum
            accumulate_gradient = counter != 0
{call}
    """


SYNCED = """\
            if accumulate_gradient:
                ctx = model.no_sync() if hasattr(model, "no_sync") else nullcontext()
                with ctx:
                    trainer.train_batch(model, sample, optimizer, accumulate_gradient, accum)
            else:
                trainer.train_batch(model, sample, optimizer, accumulate_gradient, accum)"""
UNSYNCED = """\
            trainer.train_batch(model, sample, optimizer, accumulate_gradient, accum)"""


def test_a_step_function_whose_caller_in_another_file_skips_the_sync_is_not_reported(tmp_path: Path) -> None:
    root = _write(tmp_path, {"trainer.py": STEP, "main.py": _main(SYNCED)})
    assert _found(root) == set()


def test_a_step_function_whose_caller_never_skips_the_sync_is_reported(tmp_path: Path) -> None:
    root = _write(tmp_path, {"trainer.py": STEP, "main.py": _main(UNSYNCED)})
    assert _found(root) == {("accum-no-sync-missing", "trainer.py")}
