"""rank0-only-loss-log on the shapes real scripts take (beyond the `# expect:` corpus)."""

from __future__ import annotations

import textwrap

from ddp_doctor.lint.engine import lint_source


def _lines(source: str) -> list[int]:
    return [
        f.line for f in lint_source(textwrap.dedent(source), "t.py").findings if f.id == "rank0-only-loss-log"
    ]


def test_validation_loss_reusing_the_name_loss_is_not_the_training_loss() -> None:
    assert (
        _lines("""
            import torch
            def train(model, loader, val_loader, optimizer, rank):
                for x, y in loader:
                    loss = model(x, y)
                    loss.backward()
                    optimizer.step()
                with torch.no_grad():
                    for x, y in val_loader:
                        loss = model(x, y)
                if rank == 0:
                    print(f"val loss {loss.item()}")
        """)
        == []
    )


def test_metrics_name_rebound_to_reduced_values_is_not_flagged() -> None:
    assert _lines("""
            def train(fabric, model, loader, optimizer):
                for x, y in loader:
                    loss = model(x, y)
                    fabric.backward(loss)
                    optimizer.step()
                    metrics = {"loss": loss.item()}
                    fabric.log_dict(metrics)
                    val = fabric.all_reduce(loss.detach())
                    metrics = {"val_loss": val}
                    fabric.log_dict(metrics)
        """) == [8]


def test_meter_updated_with_the_loss_and_logged_under_rank0() -> None:
    assert _lines("""
            def train(model, loader, optimizer, losses, logger, args):
                for it, (x, y) in enumerate(loader):
                    loss = model(x, y)
                    loss.backward()
                    optimizer.step()
                    losses.update(loss.item(), x.size(0))
                    if args.rank == 0 and it % 50 == 0:
                        logger.info("Loss {loss.avg:.4f}".format(loss=losses))
        """) == [9]


def test_synchronized_meter_and_writer_created_only_on_rank0() -> None:
    assert _lines("""
            def train(model, loader, optimizer, meter, rank, SummaryWriter):
                writer = SummaryWriter() if rank == 0 else None
                for x, y in loader:
                    loss = model(x, y)
                    loss.backward()
                    optimizer.step()
                    writer.add_scalar("loss", loss.item())
                    meter.update(loss.item())
                meter.synchronize_between_processes()
                if rank == 0:
                    print(meter)
        """) == [8]


def test_tqdm_desc_assignment_under_rank0_and_rank_minus_one_guard() -> None:
    assert _lines("""
            def train(model, loader, optimizer, pbar, RANK):
                tloss = 0.0
                for i, (x, y) in enumerate(loader):
                    loss = model(x, y)
                    loss.backward()
                    optimizer.step()
                    if RANK in (-1, 0):
                        tloss = (tloss * i + loss.item()) / (i + 1)
                        pbar.desc = f"{tloss:.3g}"
        """) == [10]


def test_a_guard_true_on_every_rank_is_not_rank0() -> None:
    assert (
        _lines("""
            def train(model, loader, optimizer, rank):
                for x, y in loader:
                    loss = model(x, y)
                    loss.backward()
                    optimizer.step()
                    if rank in {0, 1, 2, 3}:
                        print(loss.item())
        """)
        == []
    )
