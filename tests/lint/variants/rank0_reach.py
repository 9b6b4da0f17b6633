"""rank0-only-loss-log variants where the loss, the rank-0 test or the rank-0-only output reaches
the log from further away: a running mean named ``loss_p``, a dict of loss terms summed through
``list(...)``, a ``ProgressMeter`` class in a file of its own, a training helper of a worker that
replaces ``print`` off rank 0, the rank handed to a class under a name of its own (round 26)."""

from tests.lint.variants.rank0_structure import R, one

C = {}

# GraphCast_pytorch: ``loss_p = accum_loss / (i - accum_step)`` printed on rank 0. A ``_p`` suffix
# is a probability unless the name says loss.
RUNNING_MEAN = """
    accum_loss = 0
    accum_step = 0
    for epoch in range(args.epochs):
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            accum_loss += loss.item()
            if i > 0 and i % 5 == 0 and rank == 0:
                loss_p = accum_loss / (i - accum_step)
                accum_step = i
                accum_loss = 0
                print(f"epoch {epoch} batch {i} loss {loss_p}")
"""
C["loss_named_p_running_mean"] = (R, True, one(RUNNING_MEAN), "train.py")
C["NEG_loss_named_p_running_mean_all_reduced"] = (
    R,
    False,
    one(
        """
    accum_loss = 0
    accum_step = 0
    for epoch in range(args.epochs):
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            accum_loss += loss.item()
            if i > 0 and i % 5 == 0:
                t = torch.tensor([accum_loss / (i - accum_step)], device="cuda")
                dist.all_reduce(t)
                loss_p = t.item() / dist.get_world_size()
                accum_step = i
                accum_loss = 0
                if rank == 0:
                    print(f"epoch {epoch} batch {i} loss {loss_p}")
"""
    ),
    "train.py",
)

# lab4d: the model returns a dict of loss terms; backward runs on
# ``torch.sum(torch.stack(list(loss_dict.values())))`` and rank 0 writes every term.
TERMS = """
    writer = SummaryWriter()
    for epoch in range(args.epochs):
        for step, batch in enumerate(loader):
            loss_dict = model(batch)
            total_loss = torch.sum(torch.stack(list(loss_dict.values())))
            total_loss.backward()
            optimizer.step()
            optimizer.zero_grad()
{REDUCE}            if rank == 0:
                for k, v in loss_dict.items():
                    writer.add_scalar(k, v, step)
"""
C["loss_terms_stacked_from_a_list"] = (R, True, one(TERMS.replace("{REDUCE}", "")), "train.py")
C["NEG_loss_terms_stacked_from_a_list_all_reduced"] = (
    R,
    False,
    one(
        TERMS.replace(
            "{REDUCE}",
            "            for v in loss_dict.values():\n"
            "                dist.all_reduce(v)\n"
            "                v /= dist.get_world_size()\n",
        )
    ),
    "train.py",
)
