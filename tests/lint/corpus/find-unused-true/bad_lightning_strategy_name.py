import lightning.pytorch as pl


def main(model, datamodule):
    trainer = pl.Trainer(
        devices="auto",
        strategy="ddp_find_unused_parameters_true",  # expect: find-unused-true
        max_epochs=10,
    )
    trainer.fit(model, datamodule=datamodule)
