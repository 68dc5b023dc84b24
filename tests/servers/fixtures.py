"""pytest fixtures for the fake servers; load with `pytest_plugins` from a conftest."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .anthropic_server import AnthropicServer
from .openai_server import OpenAIServer


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicServer]:
    with AnthropicServer() as server:
        yield server
