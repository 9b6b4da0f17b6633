"""A LightningModule trained by `Trainer(strategy="ddp", devices=2, accumulate_grad_batches=4)`,
in the style of Lightning's own examples (a small classifier, `F.nll_loss`, `self.log`); no
probe code. Lightning launches rank 1 itself (it re-runs this script with its environment).
Automatic optimisation runs the last micro-batch's forward, backward and gradient clipping
inside `optimizer.step(closure)`.
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class LitClassifier(L.LightningModule):
    def __init__(self, hidden_dim: int = 16, learning_rate: float = 1e-2) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.l1 = nn.Linear(8, self.hparams.hidden_dim)
        self.l2 = nn.Linear(self.hparams.hidden_dim, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(self.l2(torch.relu(self.l1(x))), dim=1)

    def training_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
        x, y = batch
        loss = F.nll_loss(self(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):  # type: ignore[no-untyped-def]
        return torch.optim.Adam(self.parameters(), lr=self.hparams.learning_rate)


def dataset() -> TensorDataset:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(512, 8, generator=gen)
    y = (x[:, :4].argmax(dim=1)).long()
    return TensorDataset(x, y)


if __name__ == "__main__":
    L.seed_everything(0)
    trainer = L.Trainer(
        strategy="ddp",
        accelerator="cpu",
        devices=2,
        max_steps=12,
        accumulate_grad_batches=4,
        gradient_clip_val=1.0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(LitClassifier(), DataLoader(dataset(), batch_size=8, shuffle=True))
