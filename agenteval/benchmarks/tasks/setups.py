"""Named setups: what a task's copy of the toybox looks like before the agent starts.

Each setup changes a fresh copy in place and promises a state that tests/test_task_setups.py
checks (the red test fails, the cache test fails cold and passes warm, the hanging test never
finishes, the log has the same bytes every run, the user's edits are uncommitted). Everything
is offline and deterministic: git commits carry a fixed author and date, so even their hashes
are the same on every run.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from agenteval.benchmarks.tasks import biglog

GIT_DATE = "2025-03-03T09:00:00+00:00"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Toybox Dev",
    "GIT_AUTHOR_EMAIL": "dev@toybox.invalid",
    "GIT_COMMITTER_NAME": "Toybox Dev",
    "GIT_COMMITTER_EMAIL": "dev@toybox.invalid",
    "GIT_AUTHOR_DATE": GIT_DATE,
    "GIT_COMMITTER_DATE": GIT_DATE,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


class SetupError(Exception):
    """A setup could not be applied (unknown name, or the copy is not the toybox)."""


def git(workdir: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        raise SetupError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def _write(workdir: Path, rel: str, text: str) -> None:
    path = workdir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _replace(workdir: Path, rel: str, old: str, new: str) -> None:
    path = workdir / rel
    text = path.read_text(encoding="utf-8")
    if old not in text:
        raise SetupError(f"{rel}: the text this setup changes is not there")
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


RED_TEST = '''"""The v1 warehouse format (owned by the integrations team)."""

from toybox.export import legacy_header


def test_legacy_header_is_v1_format():
    # v1 files were semicolon-separated; the integrations team is migrating them.
    assert legacy_header() == "id;name;qty"
'''


def red_neighbour(workdir: Path) -> None:
    """An unrelated test that is already red and must stay untouched."""
    _write(workdir, "tests/test_legacy.py", RED_TEST)


RATES_TEST = """import pytest

from toybox.rates import convert, load_rates


def test_rates_are_numbers():
    assert load_rates()["EUR"] == pytest.approx(0.92)


def test_convert_to_yen():
    assert convert(10, "JPY") == pytest.approx(1512.0)
"""


def cold_cache(workdir: Path) -> None:
    """A test that fails from a cold cache and passes once an earlier run warmed it."""
    _write(workdir, "tests/test_rates.py", RATES_TEST)
    cache = workdir / ".toybox-cache"
    if cache.exists():
        raise SetupError(".toybox-cache exists in a fresh copy")


USER_MONEY = '''

def format_range(low: float, high: float) -> str:
    """A price range for the catalogue: "$5.00 to $9.50".

    Work in progress: the catalogue team wants "from $5.00" when low == high.
    """
    return f"{format_money(low)} to {format_money(high)}"
'''
USER_NOTES = "# notes\n\n- catalogue price ranges: ask Sam about the 'from' wording\n"


def user_edits(workdir: Path) -> None:
    """A git checkout whose user has uncommitted edits (a tracked file and an untracked one)."""
    git(workdir, "init", "-q")
    git(workdir, "add", "-A")
    git(workdir, "commit", "-q", "-m", "toybox 0.3.0")
    money = workdir / "toybox/money.py"
    money.write_text(money.read_text(encoding="utf-8") + USER_MONEY, encoding="utf-8")
    _write(workdir, "NOTES.md", USER_NOTES)


def readme_contradicts(workdir: Path) -> None:
    """A README whose configuration section the code does not do."""
    _replace(
        workdir,
        "README.md",
        "Settings come from `toybox/config.py`. The server listens on port 8080.",
        "The server listens on port 8000 by default. Set the `TOYBOX_PORT` environment\n"
        "variable to use another port, and `TOYBOX_DEBUG=1` for debug logging.",
    )


def not_installed(workdir: Path) -> None:
    """The package is not installed and pytest is not told where it is: a bare `pytest`
    cannot import it (`python -m pytest` from the project folder can)."""
    _replace(workdir, "pyproject.toml", 'pythonpath = ["."]\n', "")


def big_log(workdir: Path) -> None:
    _write(workdir, "logs/service.log", biglog.render())


HANGING_TEST = """import threading


def test_broker_handshake():
    # Waits for the message broker to signal it is ready. Nothing starts a broker here.
    ready = threading.Event()
    assert ready.wait()
"""


def hanging_suite(workdir: Path) -> None:
    """A test that never finishes: every full run of the suite hangs."""
    _write(workdir, "tests/test_broker.py", HANGING_TEST)


PATCH = """--- a/toybox/money.py
+++ b/toybox/money.py
@@ -3,7 +3,8 @@
\x20
 def parse_amount(text: str) -> float:
-    \"\"\"A typed amount such as "1,234.50" or "$12" as a number of dollars.\"\"\"
-    cleaned = text.strip().replace("$", "").replace(",", "")
+    \"\"\"A typed amount such as "1234,50" or "$12" as a number of dollars.\"\"\"
+    # European customers type a decimal comma.
+    cleaned = text.strip().replace("$", "").replace(",", ".")
     if not cleaned:
         raise ValueError("empty amount")
     return float(cleaned)
"""


def patch_for_review(workdir: Path) -> None:
    _write(workdir, "patches/decimal-comma.patch", PATCH)


SETUPS: dict[str, Callable[[Path], None]] = {
    "red_neighbour": red_neighbour,
    "cold_cache": cold_cache,
    "user_edits": user_edits,
    "readme_contradicts": readme_contradicts,
    "not_installed": not_installed,
    "big_log": big_log,
    "hanging_suite": hanging_suite,
    "patch_for_review": patch_for_review,
}


def apply(name: str | None, workdir: Path) -> None:
    if name is None:
        return
    try:
        setup = SETUPS[name]
    except KeyError:
        raise SetupError(f"unknown setup {name!r} (known: {', '.join(sorted(SETUPS))})") from None
    setup(workdir)
