"""Shared definitions with no layer: the catalog (every finding ID, threshold and text), the one
result type (findings), the one writer (safe_io), terminal escaping and secret redaction.

Imports nothing else from ddp_doctor: every other package may import it.
"""
