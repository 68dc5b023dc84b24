"""CI for a project that evaluates its agent with agenteval: the lane a trigger runs
(`ci.plan`) and the GitHub Actions workflow `agenteval init-ci` writes (`ci.workflow`)."""
