"""Memories an agent can be given, behind one protocol (agenteval.memory.base), looked up by
`kind`: `reference`, the project's own SQLite memory, and `mcp`, any memory server."""
