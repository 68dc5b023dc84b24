from toybox.config import DEFAULT_PORT, load_settings


def test_default_settings():
    settings = load_settings()
    assert settings.port == DEFAULT_PORT
    assert settings.host == "127.0.0.1"
    assert settings.debug is False
