"""Labelled judge controls and what they measure about any configured judge."""
