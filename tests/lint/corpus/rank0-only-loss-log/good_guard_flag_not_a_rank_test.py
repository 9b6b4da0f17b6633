# A local flag that is not a rank test (``is_tracking = args.log_with is not None``) guards nothing:
# every rank logs; a validation divergence is not the training loss.
class Trainer:
    def epoch_logging(self, tracker, logs, epoch):
        tracker.log(logs, step=epoch)

    def train(self, accelerator, args, model, loader, optimizer, tracker, val_avg):
        is_tracking = args.log_with is not None
        for epoch in range(3):
            total = 0.0
            for batch in loader:
                loss = model(batch).loss
                accelerator.backward(loss)
                optimizer.step()
                total += loss.item()
            if is_tracking:
                self.epoch_logging(tracker, {"loss/epoch_average": total / len(loader)}, epoch)
            if accelerator.is_main_process:
                loss_validation_divergence = val_avg - total / len(loader)
                tracker.log({"loss/validation/divergence": loss_validation_divergence}, step=epoch)
