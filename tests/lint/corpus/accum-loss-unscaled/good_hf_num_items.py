def train(model, micro_batches, optimizer, num_items_in_batch):
    for batch in micro_batches:
        outputs = model(**batch, num_items_in_batch=num_items_in_batch)
        outputs.loss.backward()
    optimizer.step()
    optimizer.zero_grad()
