# A Hugging Face-style forward's outputs held in a name, then unpacked (`loss, logits =
# outputs[:2]`): the same loss as `loss, logits = model(...)`, backpropagated undivided.
def train(model, loader, optimizer, args):
    for step, inputs in enumerate(loader):
        outputs = model(**inputs)
        loss, logits = outputs[:2]
        loss.backward()  # expect: accum-loss-unscaled
        if (step + 1) % args.gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
