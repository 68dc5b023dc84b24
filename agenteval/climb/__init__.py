"""Hillclimb sessions: proposers, the edit guard, the keep rule and held-out accounting."""
