# sd-scripts: ``avr_loss`` and ``logs`` first hold the training loss (logged on every rank here),
# then are rebound to the validation recorder's average before the main-process log: that log shows
# validation values, not rank 0's training loss.
def train(accelerator, model, loader, val_loader, optimizer, recorder, val_recorder, tracker):
    for epoch in range(3):
        for batch in loader:
            loss = model(batch).loss
            accelerator.backward(loss)
            optimizer.step()
            recorder.add(loss=loss.item())
            avr_loss: float = recorder.moving_average
            logs = {"avr_loss": avr_loss}
            print(logs)
        for batch in val_loader:
            val_recorder.add(loss=model(batch).loss.item())
        if accelerator.is_main_process:
            avr_loss: float = val_recorder.moving_average
            logs = {"loss/validation/epoch_average": avr_loss}
            tracker.log(logs, step=epoch)
