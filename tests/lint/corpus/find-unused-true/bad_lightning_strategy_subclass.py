import pytorch_lightning as pl
from pytorch_lightning import strategies


class MyDDPStrategy(strategies.DDPStrategy):
    """A project strategy that only changes how checkpoints are saved: the keyword reaches DDP."""

    def save_checkpoint(self, checkpoint, filepath, storage_options=None):
        if self.is_global_zero:
            super().save_checkpoint(checkpoint, filepath, storage_options)


def main(model, datamodule, devices):
    strategy = MyDDPStrategy(find_unused_parameters=True, start_method="spawn")  # expect: find-unused-true
    trainer = pl.Trainer(accelerator="gpu", devices=devices, strategy=strategy, max_epochs=10)
    trainer.fit(model, datamodule=datamodule)
