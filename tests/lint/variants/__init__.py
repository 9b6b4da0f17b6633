"""Variants of each rule's canonical bug, one step off the shapes the rules were written on.

Each module holds ``C``: ``{name: (rule, expected, {path: source}, reported file)}`` — a small project
whose reported file (``path:line``: that line of it) must (``expected`` True) or must not carry a
finding of ``rule``. The positives
vary one thing at a time (the rank test, the loss's name, how the value reaches the log, a class
instead of a function, the builder in another file, a loader handed to a trainer class, an alias);
the negatives are the correct idioms next to them. Written as a metamorphic check of generalisation
(issue #27): a variant that renames or moves the bug must not lose the finding.
"""
