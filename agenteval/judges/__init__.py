"""Judges: `code` checks what code can; others grade with a rubric."""
