"""How far two runs' fingerprints may differ from floating-point rounding alone (docs/equivalence.md).

A sum of n terms computed in a dtype with unit roundoff u, in any order, has error

    |fl(Σ x_i) − Σ x_i| ≤ γ_{n−1} · Σ|x_i|,   γ_n = n·u / (1 − n·u)

(Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §4.2, eq. 4.4). Two runs that
split the same global batch differently compute the same sum in two orders, so they may differ by
γ_{n_a} + γ_{n_b} relative to Σ|x_i|. For one gradient element the terms are the per-token
contributions of the step: n = T + A·W + 1, with T the loss terms of the global batch (valid tokens,
else samples), A micro-steps accumulated into `.grad`, W ranks averaged by the all-reduce (each
adds one rounding per term it adds), and 1 for the final scaling. Σ|x_i| is not observable without
per-sample gradients; the comparison uses the tensor's own scale instead (max|g| for elements and
max|·|, Σ|g| for Σg, ‖g‖ for the norm).

After the optimizer: SGD-type updates are linear in the gradient (τ_update = 2·τ_grad: momentum
and weight decay add one rounding each); Adam-type updates divide by √v and amplify an element's
relative error where |g| is near its own rounding error, which no a-priori bound covers; there
τ_update = √τ_grad (a margin, not a derivation; said in the output).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# unit roundoff u = 2^-p for a p-bit significand (round to nearest)
UNIT_ROUNDOFF: dict[str, float] = {
    "float64": 2.0**-53,
    "float32": 2.0**-24,
    "tfloat32": 2.0**-11,
    "bfloat16": 2.0**-8,
    "float16": 2.0**-11,
}
ADAM_LIKE = ("Adam", "AdamW", "NAdam", "RAdam", "Adamax", "Adafactor", "Lamb", "Lion", "Adagrad", "RMSprop")


def unit_roundoff(dtype: str) -> float:
    return UNIT_ROUNDOFF.get(dtype.removeprefix("torch."), UNIT_ROUNDOFF["float32"])


def gamma(n: int, u: float) -> float:
    """γ_n = n·u / (1 − n·u); inf when n·u ≥ 1 (no bound)."""
    nu = n * u
    return math.inf if nu >= 1 else nu / (1 - nu)


def terms(loss_terms: int, accum: int, world: int) -> int:
    """n = T + A·W + 1: the terms and roundings of one gradient element (module docstring)."""
    return max(1, loss_terms) + max(1, accum) * max(1, world) + 1


@dataclass(frozen=True)
class RunShape:
    """What one run's reduction looks like in the step compared."""

    world: int
    accum: int  # micro-steps per optimizer step (per rank)
    loss_terms: int  # valid tokens of the global batch (else samples)
    dtype: str  # the gradients' dtype (the reduction's; autocast computes in lower precision)
    compute_dtype: str | None = None  # autocast dtype, when the step ran under autocast

    @property
    def n(self) -> int:
        return terms(self.loss_terms, self.accum, self.world)

    @property
    def u(self) -> float:
        # under autocast the per-token products are rounded to the autocast dtype: the larger u wins
        u = unit_roundoff(self.dtype)
        return max(u, unit_roundoff(self.compute_dtype)) if self.compute_dtype else u


@dataclass(frozen=True)
class Tolerance:
    grad: float  # τ for gradient stages (local, reduced, clipped)
    update: float  # τ for the update and the parameters
    adam: bool
    a: RunShape
    b: RunShape

    def formula(self) -> str:
        return (
            f"τ = γ(n_a) + γ(n_b), γ(n) = n·u/(1−n·u); n = T + A·W + 1: "
            f"n_a = {self.a.loss_terms} + {self.a.accum}·{self.a.world} + 1 = {self.a.n}, "
            f"n_b = {self.b.loss_terms} + {self.b.accum}·{self.b.world} + 1 = {self.b.n}, "
            f"u = {self.a.u:.3g}/{self.b.u:.3g} → τ_grad = {self.grad:.3g}; "
            + (
                f"τ_update = √τ_grad = {self.update:.3g} (Adam-type: a margin, not a bound)"
                if self.adam
                else f"τ_update = 2·τ_grad = {self.update:.3g}"
            )
        )


def tolerance(a: RunShape, b: RunShape, optimizer: str | None) -> Tolerance:
    grad = gamma(a.n, a.u) + gamma(b.n, b.u)
    adam = optimizer is not None and any(optimizer.startswith(name) for name in ADAM_LIKE)
    update = math.sqrt(grad) if adam else 2 * grad
    return Tolerance(grad=grad, update=min(update, math.inf), adam=adam, a=a, b=b)
