"""Measured quantities, one module each, with the formula and its source in the docstring."""
