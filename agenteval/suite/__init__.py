"""Scenario files in, a resolved suite out: validation with path:line messages."""
