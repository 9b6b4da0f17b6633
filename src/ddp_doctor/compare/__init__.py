"""`ddp-doctor compare`: two runs side by side, the causes of their difference, and its renderers."""
