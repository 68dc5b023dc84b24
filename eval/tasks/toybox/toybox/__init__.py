"""toybox: the back office of a small toy shop."""

__version__ = "0.3.0"
