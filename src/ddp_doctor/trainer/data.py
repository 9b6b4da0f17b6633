"""Synthetic training data with a known answer: a seeded Markov source over bytes.

Documents are walks of a first-order Markov chain whose first token is drawn from the chain's
stationary distribution pi, so every predicted token has the same conditional entropy. The best
possible next-token cross-entropy (the *entropy floor*, nats/token) is therefore exactly the
entropy rate of the chain (Cover & Thomas, Elements of Information Theory, Thm. 4.2.4):

    H = -sum_i pi_i sum_j P_ij log P_ij

A model whose loss approaches H has learned the source; a loss below H means a bug (leakage).
Document lengths vary (uniform in [doc_min_len, seq_len + 1]) so that padding and the valid-token
count matter; padded target positions carry the label IGNORE_INDEX. No files, no downloads:
sample i is regenerated from (seed, i), so every rank and every process sees identical data.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch
from torch.utils.data import Dataset

from ddp_doctor.trainer.config import TrainConfig

# Label of positions that do not count in the loss (PyTorch / Hugging Face convention).
IGNORE_INDEX = -100
# Token used for padded input positions (a byte no Markov state maps to).
PAD_TOKEN = 0
# The chain: STATES byte values (printable ASCII from FIRST_BYTE), each with BRANCHING successors
# whose probabilities are Dirichlet(DIRICHLET_ALPHA). Small enough for the tiny preset to learn in
# a few hundred steps, structured enough that the floor (~1 nat) is far below ln(256) = 5.5.
STATES = 64
FIRST_BYTE = 32
BRANCHING = 4
DIRICHLET_ALPHA = 1.0


@dataclass(frozen=True)
class MarkovSource:
    """A seeded first-order Markov chain over `states` byte values."""

    seed: int = 0
    states: int = STATES
    branching: int = BRANCHING

    @cached_property
    def transition(self) -> np.ndarray:
        """Row-stochastic matrix P (states x states). State i -> i+1 is always possible, so the
        chain is irreducible and pi is unique."""
        rng = np.random.default_rng([self.seed, 0xD0C])
        p = np.zeros((self.states, self.states))
        for i in range(self.states):
            others = rng.choice(
                np.delete(np.arange(self.states), (i + 1) % self.states),
                size=self.branching - 1,
                replace=False,
            )
            successors = np.concatenate([[(i + 1) % self.states], others])
            p[i, successors] = rng.dirichlet(np.full(self.branching, DIRICHLET_ALPHA))
        return p

    @cached_property
    def stationary(self) -> np.ndarray:
        """pi with pi P = pi, sum(pi) = 1 (solved as a linear system, exact to float64)."""
        n = self.states
        a = np.vstack([self.transition.T - np.eye(n), np.ones(n)])
        b = np.zeros(n + 1)
        b[-1] = 1.0
        pi, *_ = np.linalg.lstsq(a, b, rcond=None)
        return pi

    def entropy_floor(self) -> float:
        """Entropy rate H = -sum_i pi_i sum_j P_ij ln P_ij, in nats per predicted token."""
        p = self.transition
        logp = np.log(p, where=p > 0, out=np.zeros_like(p))
        return float(-(self.stationary[:, None] * p * logp).sum())

    def sample(self, length: int, rng: np.random.Generator) -> np.ndarray:
        """One document of `length` byte tokens, starting from pi."""
        cumulative = np.cumsum(self.transition, axis=1)
        u = rng.random(length)
        states = np.empty(length, dtype=np.int64)
        states[0] = min(int(np.searchsorted(np.cumsum(self.stationary), u[0])), self.states - 1)
        for t in range(1, length):
            row = cumulative[states[t - 1]]
            states[t] = min(int(np.searchsorted(row, u[t] * row[-1])), self.states - 1)
        return states + FIRST_BYTE


def entropy_floor(seed: int = 0) -> float:
    """The entropy floor (nats/token) of the data the trainer generates with this seed."""
    return MarkovSource(seed).entropy_floor()


class MarkovDocuments(Dataset[dict[str, torch.Tensor]]):
    """`num_docs` documents, each one padded training sample of `seq_len` positions.

    Sample i is {"input_ids": doc[:-1] padded with PAD_TOKEN, "labels": doc[1:] padded with
    IGNORE_INDEX}; a document of n tokens gives n - 1 valid targets.
    """

    def __init__(self, num_docs: int, seq_len: int, min_len: int, seed: int = 0) -> None:
        self.num_docs, self.seq_len, self.min_len, self.seed = num_docs, seq_len, min_len, seed
        self.source = MarkovSource(seed)

    def __len__(self) -> int:
        return self.num_docs

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        rng = np.random.default_rng([self.seed, 1, index])
        length = int(rng.integers(self.min_len, self.seq_len + 2))  # in [min_len, seq_len + 1]
        doc = torch.from_numpy(self.source.sample(length, rng))
        input_ids = torch.full((self.seq_len,), PAD_TOKEN, dtype=torch.long)
        labels = torch.full((self.seq_len,), IGNORE_INDEX, dtype=torch.long)
        input_ids[: length - 1] = doc[:-1]
        labels[: length - 1] = doc[1:]
        return {"input_ids": input_ids, "labels": labels, "index": torch.tensor(index)}


def dataset_for(cfg: TrainConfig) -> MarkovDocuments:
    """The dataset a run of `cfg` trains on."""
    return MarkovDocuments(cfg.dataset_docs, cfg.seq_len, cfg.doc_min_len, cfg.seed)
