def train(model, get_batch, optimizer, gradient_accumulation_steps):
    while True:
        for micro_step in range(gradient_accumulation_steps):
            X, Y = get_batch("train")
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
