# kohya sd-scripts: ``is_tracking = len(accelerator.trackers) > 0`` is true on the main process only
# (trackers are initialised there), and the epoch loss is handed through two helpers of the class to
# ``tracker.log``; a local bound to a rank test works the same way (``log_now = rank == 0``).
class Trainer:
    def epoch_logging(self, accelerator, logs, epoch):
        self.accelerator_logging(accelerator, logs, epoch)

    def accelerator_logging(self, accelerator, logs, step):
        for tracker in accelerator.trackers:
            tracker.log(logs, step=step)

    def train(self, accelerator, model, loader, optimizer, writer, rank):
        is_tracking = len(accelerator.trackers) > 0
        log_now = rank == 0
        for epoch in range(3):
            total = 0.0
            for batch in loader:
                loss = model(batch).loss
                accelerator.backward(loss)
                optimizer.step()
                total += loss.item()
            if is_tracking:
                logs = {"loss/epoch_average": total / len(loader)}
                self.epoch_logging(accelerator, logs, epoch)  # expect: rank0-only-loss-log
            if log_now:
                writer.add_scalar("loss", total, epoch)  # expect: rank0-only-loss-log
