"""The scenario lifecycle: health of a suite over many runs, and drafts from real sessions."""
