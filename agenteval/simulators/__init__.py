"""User simulators: who writes each user message (`scripted`, `llm`)."""
