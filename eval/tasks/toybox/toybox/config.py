"""Runtime settings of the toybox server."""

from dataclasses import dataclass

DEFAULT_PORT = 8080
DEFAULT_HOST = "127.0.0.1"


@dataclass(frozen=True)
class Settings:
    host: str
    port: int
    debug: bool = False


def load_settings() -> Settings:
    """The settings the server starts with."""
    return Settings(host=DEFAULT_HOST, port=DEFAULT_PORT)
