"""``ddp-doctor lint``: find distributed-training pitfalls statically, with near-zero false alarms.

``engine.lint_paths`` / ``engine.lint_source`` are the API; ``rules/`` holds one class per
catalog lint ID; ``loops`` knows what an accumulation loop is; ``context`` resolves import
aliases. Nothing here imports torch or the code it checks. See docs/lint.md.
"""
