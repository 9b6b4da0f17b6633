# FiD's reader: a Hugging Face-style forward given its labels returns the loss first
# (`return_dict=False`), backpropagated undivided while the optimizer steps every
# `accumulation_steps` batches.
def train(model, optimizer, scheduler, loader, opt):
    step = 0
    for i, (labels, context_ids, context_mask) in enumerate(loader):
        step += 1
        train_loss = model(input_ids=context_ids, attention_mask=context_mask, labels=labels)[0]
        train_loss.backward()  # expect: accum-loss-unscaled
        if step % opt.accumulation_steps == 0:
            optimizer.step()
            scheduler.step()
            model.zero_grad()
