"""The comparison gate: compare, buckets, baseline, noise floor, and their reports."""
