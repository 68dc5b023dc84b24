"""`python -m agenteval` runs the command line."""

from agenteval.entry import main

main()
