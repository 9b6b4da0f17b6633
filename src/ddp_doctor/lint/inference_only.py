"""Entry scripts that never train: evaluation, inference and export scripts of a training project.

A DDP wrap in such a script (CodeReviewer's ``run_test_cls.py``, a ``test.py`` that only runs
``validate()``, TinyViT's ``save_logits.py``) never reaches a backward: DDP's
``find_unused_parameters`` traversal runs only when a forward records a graph, and BatchNorm in
``eval()`` normalises with running statistics, so ``find-unused-true`` and ``batchnorm-unsynced``
describe costs and numerics that never happen there.

A file is taken as never training only on positive evidence, because a miss here silences true
findings: it is an entry script (``if __name__ == "__main__":``), nothing in it backprops (any
spelling lint/loops.py knows), it calls nothing whose name says it trains or steps (``train``,
``fit``, ``step``, ``backward``, ``run``, ``learn``: a library trainer such as HF ``trainer.train()`` or Lightning's
``trainer.fit()`` trains without a visible backward), and, in project mode, no project function
it calls runs backward (directly or through its callees). A library module that only builds the
wrapped model for its callers (DPR's ``setup_for_distributed_mode``) is not an entry script and is
still checked.
"""

from __future__ import annotations

import ast
import re

from ddp_doctor.lint.context import FileContext, dotted, is_main_guard
from ddp_doctor.lint.loops import LoopFacts

# ``learn``: reinforcement-learning agents train so (stable-baselines' ``model.learn(...)``,
# AlphaZeroFromScratch's ``alphaZero.learn()``)
TRAINING_CALL = re.compile(r"train|fit|backward|(^|_)step$|^step|^run$|^learn$", re.IGNORECASE)


def never_trains(ctx: FileContext, facts: LoopFacts) -> bool:
    """``ctx`` is an entry script that never runs a backward (see the module docstring)."""
    if not _entry_script(ctx.tree):
        return False
    project = ctx.project
    for call in ctx.of_type(ast.Call):
        name = (dotted(call.func) or "").rsplit(".", 1)[-1]
        if TRAINING_CALL.search(name) or facts.backward(call) is not None:
            return False
        if project is not None:
            # a project function that backprops, called or handed over (``mp.spawn(worker, ...)``);
            # building a loss-scaler object (a class whose ``__call__`` backprops) is not training:
            # calling the instance is, and facts.backward sees that
            for target in (call.func, *call.args, *(k.value for k in call.keywords)):
                if not isinstance(target, (ast.Name, ast.Attribute)):
                    continue
                summary = project.summary_for(ctx, target)
                if summary is not None and summary.calls_backward and not _names_a_class(summary.qualname):
                    return False
            # a method of a project object built here that backprops (``agent = Learner(ddp_model,
            # opt)`` then ``agent.go()``): the object's class trains, under any method name
            method = project.instance_method(ctx, call)
            if method is not None and method.calls_backward:
                return False
    return True


def _names_a_class(qualname: str) -> bool:
    return qualname.rsplit(".", 1)[-1][:1].isupper()


def _entry_script(tree: ast.Module) -> bool:
    """The module runs as a script: a top-level ``if __name__ == "__main__":``."""
    return any(isinstance(stmt, ast.If) and is_main_guard(stmt.test) for stmt in tree.body)
