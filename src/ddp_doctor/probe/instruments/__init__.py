"""One module per signal family; each has `install()` that patches torch once and documents what it records."""
