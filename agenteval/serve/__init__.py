"""Servers: any configured target as an MCP agent, and a small local model."""
