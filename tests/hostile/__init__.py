"""The hostile-input matrix (issue 10), one module per area; matrix.py builds and runs it."""
