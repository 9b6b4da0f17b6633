# The unpacked forward outputs' loss, divided by the accumulation count before backward.
def train(model, loader, optimizer, args):
    for step, inputs in enumerate(loader):
        outputs = model(**inputs)
        loss, logits = outputs[:2]
        if args.gradient_accumulation_steps > 1:
            loss = loss / args.gradient_accumulation_steps
        loss.backward()
        if (step + 1) % args.gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
