# A multi-task pre-training loop (UNITER-style): each task's loss is computed in its own branch
# of an `if`, backpropagated through apex `amp.scale_loss(..., delay_unscale=...)`, and the
# optimizer steps every `gradient_accumulation_steps` micro-batches. `scaled_loss` is the loss
# times apex's dynamic loss scale, never divided by the accumulation count. A binding in the
# other branch of the `if` (`loss = itm_loss`) does not reach `loss = loss.mean()`.
from apex import amp


def train(model, optimizer, meta_loader, opts):
    for step, (name, batch) in enumerate(meta_loader):
        task = name.split("_")[0]
        loss = model(batch, task=task, compute_loss=True)
        if task.startswith("itm"):
            itm_loss, ot_loss = loss
            loss = itm_loss
        else:
            loss = loss.mean()
        delay_unscale = (step + 1) % opts.gradient_accumulation_steps != 0
        with amp.scale_loss(loss, optimizer, delay_unscale=delay_unscale) as scaled_loss:
            scaled_loss.backward()  # expect: accum-loss-unscaled
        if (step + 1) % opts.gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


def train_vqa(model, optimizer, loader, opts):
    # an instance-level loss: the mean times the number of answer classes (a size of the data,
    # not the accumulation count) is still undivided
    for step, batch in enumerate(loader):
        loss = model(batch, compute_loss=True)
        loss = loss.mean() * batch["targets"].size(1)
        with amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()  # expect: accum-loss-unscaled
        if (step + 1) % opts.gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
