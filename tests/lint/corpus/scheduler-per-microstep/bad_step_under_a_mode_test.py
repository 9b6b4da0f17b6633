# A run-epoch function shared by training and validation: `if mode == "train":` is the same on
# every pass of the loop, so under it the scheduler steps on every micro-batch.
def run_epoch(data_iter, model, loss_compute, optimizer, scheduler, mode="train", accum_iter=1):
    for i, batch in enumerate(data_iter):
        loss = loss_compute(model(batch.src), batch.tgt) / accum_iter
        if mode == "train" or mode == "train+log":
            loss.backward()
            if i % accum_iter == 0:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
            scheduler.step()  # expect: scheduler-per-microstep
