"""Agents under test: a registry keyed by `kind` (see base.REGISTRY)."""
