"""Parts of the MLflow tracking edge; `agenteval.tracking.run` is the public entry point.

Nothing here imports mlflow at module level: the CLI imports agenteval cheaply and only a
tracking call pays MLflow's cold import.
"""
