def train(model, get_batch, optimizer, gradient_accumulation_steps, master_process, log_interval):
    iter_num = 0
    while True:
        for micro_step in range(gradient_accumulation_steps):
            logits, loss = model(*get_batch("train"))
            loss = loss / gradient_accumulation_steps
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if iter_num % log_interval == 0 and master_process:
            lossf = loss.item() * gradient_accumulation_steps
            print(f"iter {iter_num}: loss {lossf:.4f}")  # expect: rank0-only-loss-log
        iter_num += 1
