"""Coding tasks graded by what the finished project does (`suite.kind: tasks`).

Each task runs in a fresh copy of a small project (eval/tasks/toybox) with its setup applied
and a snapshot kept apart; a harness (scripted, chat, Claude Code) works in the copy; code
checks the finished project, the tool record says whether the work was verified, and a judge
grades four dimensions. See ARCHITECTURE.md ("benchmarks/") and docs/tasks.md.
"""
