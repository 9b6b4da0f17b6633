"""Experiment trackers' own record calls (round 25): fastNLP's ``fitlog.add_loss(value, name=...,
step=...)`` records its argument like ``writer.add_scalar`` does, so under a rank-0 test it logs rank 0's
own loss (Diffusion-BERT's ``if dist.get_rank() == 0: fitlog.add_loss(train_loss / logging_steps,
...)``); the all-reduced loss, or a module's ``add_loss`` that records nothing (Keras-style
``self.add_loss``), is no finding."""

from tests.lint.variants.rank0_structure import HEAD, SETUP, STEP

R = "rank0-only-loss-log"
C = {}

FITLOG = (
    HEAD.replace("import wandb\n", "import wandb\nimport fitlog\n")
    + SETUP
    + """    train_loss = 0.0
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
    + STEP
    + """            train_loss += loss.item()
            if (step + 1) % args.logging_steps == 0:
                REDUCE
                if dist.get_rank() == 0:
                    fitlog.add_loss(train_loss / args.logging_steps, name="train_loss", step=step)
                train_loss = 0.0
"""
)
C["fitlog_add_loss_rank0"] = (R, True, {"train.py": FITLOG.replace("REDUCE", "pass")}, "train.py")
C["NEG_fitlog_add_loss_of_the_reduced_loss"] = (
    R,
    False,
    {
        "train.py": FITLOG.replace(
            "REDUCE",
            "t = torch.tensor(train_loss).cuda()\n"
            "                dist.all_reduce(t)\n"
            "                train_loss = t.item() / dist.get_world_size()",
        )
    },
    "train.py",
)
C["NEG_add_loss_of_another_object"] = (
    R,
    False,
    {"train.py": FITLOG.replace("REDUCE", "pass").replace("fitlog.add_loss(", "model.add_loss(")},
    "train.py",
)
