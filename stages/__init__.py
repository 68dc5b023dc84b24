"""One small module per DVC stage: read params.yaml, call agenteval, write the stage's outputs."""
