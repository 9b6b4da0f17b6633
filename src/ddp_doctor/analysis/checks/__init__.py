"""One module per hypothesis of the catalog; each `check(ctx)` returns that hypothesis's findings."""
