# Index 0 of a forward called without labels is the logits, not the loss: the backward of a
# value computed from it by an unknown call is not claimed raw.
def train(model, optimizer, loader, accum, score):
    for i, (ids, mask) in enumerate(loader):
        logits = model(input_ids=ids, attention_mask=mask)[0]
        loss = score(logits)
        loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
