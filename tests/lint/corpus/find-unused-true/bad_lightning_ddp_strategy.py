import pytorch_lightning as pl
from pytorch_lightning.strategies import DDPStrategy


def main(model, datamodule):
    trainer = pl.Trainer(
        accelerator="gpu",
        strategy=DDPStrategy(find_unused_parameters=True),  # expect: find-unused-true
        max_epochs=10,
    )
    trainer.fit(model, datamodule=datamodule)
