"""Session replay (`agenteval sessions`): is the agent as good as a strong reference on the
work you actually do?

Claude Code transcripts (`transcript`) become cases (`rules`, `extract`): each request a
person typed, with what the reference assistant finally said and the tools it used. Each
case is replayed to the agent under test in its own repository through the inference engine
(`replay`), graded 0..5 on substance by a model judge (`judge`, `grading`) that is checked
on planted answers in every run (`controls`), and scored with intervals (`score`, `report`).
The user's text is scrubbed and kept private (`privacy`); MLflow gets numbers (`tracking`).
`steps` and `run` are what the command line and the DVC stages call.
"""
