"""Pinned corpus fetching against a real local HTTP server (127.0.0.1 only, never the internet)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from http_fixture import HTTPFixture, http_server

from agenteval.corpus.cache import ContentCache, default_cache_dir
from agenteval.corpus.download import RetryPolicy, parse_retry_after
from agenteval.corpus.errors import (
    DownloadError,
    FetchError,
    IntegrityError,
    MultipleFetchErrors,
    OfflineError,
    SourcesInvalid,
)
from agenteval.corpus.fetch import FetchReport, corpus_files_digest, fetch_sources
from agenteval.schema.sources import SourcesFile, load_sources, validate_sources

__all__ = ["http_server"]  # re-exported so pytest sees the fixture in this module

REPO = Path(__file__).resolve().parents[1]
FAST = RetryPolicy(base_delay=0.01, max_delay=0.05, seed=7)


def blob(n: int, seed: int = 0) -> bytes:
    """Deterministic, incompressible-looking test bytes."""
    out = bytearray()
    counter = 0
    while len(out) < n:
        out += hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        counter += 1
    return bytes(out[:n])


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pin(url: str, data: bytes) -> dict[str, Any]:
    return {"url": url, "sha256": sha(data), "bytes": len(data)}


def write_sources(directory: Path, files: dict[str, dict[str, dict[str, Any]]]) -> Path:
    """files: source name -> {relative path -> pin}."""
    doc = {
        "sources": {
            name: {
                "title": f"Test corpus {name}",
                "homepage": "https://example.org/",
                "license": "CC0-1.0",
                "files": pins,
            }
            for name, pins in files.items()
        }
    }
    path = directory / "sources.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def one_file(server: HTTPFixture, tmp_path: Path, data: bytes, **faults: Any) -> Path:
    """Serve `data` at /f.txt (with `faults`) and pin it as src/f.txt."""
    server.add("/f.txt", data, **faults)
    return write_sources(tmp_path, {"src": {"f.txt": pin(server.url("/f.txt"), data)}})


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A test that forgets cache_dir must still never touch ~/.cache.
    monkeypatch.setenv("AGENTEVAL_CACHE", str(tmp_path / "default-cache"))


def run(sources: Path | SourcesFile, tmp_path: Path, **kwargs: Any) -> FetchReport:
    kwargs.setdefault("dest", tmp_path / "dest")
    kwargs.setdefault("cache_dir", tmp_path / "cache")
    kwargs.setdefault("progress", False)
    kwargs.setdefault("retry_policy", FAST)
    return fetch_sources(sources, **kwargs)


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


# --- downloading -------------------------------------------------------------------------


def test_fetch_downloads_verifies_and_lays_out(http_server: HTTPFixture, tmp_path: Path) -> None:
    a, b, c = blob(70_000, 1), blob(10, 2), blob(300_001, 3)
    http_server.add("/a.txt", a)
    http_server.add("/b.bin", b)
    http_server.add("/c.txt", c)
    sources = write_sources(
        tmp_path,
        {
            "alpha": {"a.txt": pin(http_server.url("/a.txt"), a)},
            "beta": {
                "sub/b.bin": pin(http_server.url("/b.bin"), b),
                "c.txt": pin(http_server.url("/c.txt"), c),
            },
        },
    )
    report = run(sources, tmp_path, jobs=3)

    dest = tmp_path / "dest"
    assert (dest / "alpha" / "a.txt").read_bytes() == a
    assert (dest / "beta" / "sub" / "b.bin").read_bytes() == b
    assert (dest / "beta" / "c.txt").read_bytes() == c
    assert [(f.source, f.path, f.action, f.attempts) for f in report.files] == [
        ("alpha", "a.txt", "downloaded", 1),
        ("beta", "c.txt", "downloaded", 1),
        ("beta", "sub/b.bin", "downloaded", 1),
    ]
    assert report.total_files == 3
    assert report.total_bytes == report.transferred_bytes == len(a) + len(b) + len(c)
    assert report.counts() == {"downloaded": 3}
    assert "3 files" in report.summary() and "3 downloaded" in report.summary()
    assert json.dumps(report.as_dict())  # serialisable for the CLI's --json, if it wants one
    entry = ContentCache(tmp_path / "cache").entry(sha(c))
    assert entry == tmp_path / "cache" / "sha256" / sha(c)[:2] / sha(c)
    assert entry.read_bytes() == c
    assert not os.access(entry, os.W_OK) or os.geteuid() == 0  # read-only (root ignores modes)
    assert [http_server.count(p) for p in ("/a.txt", "/b.bin", "/c.txt")] == [1, 1, 1]
    # No temp, part or lock debris under the destination.
    assert len(files_under(dest)) == 3


def test_shared_digest_downloads_once_and_mirrors_fall_back(
    http_server: HTTPFixture, tmp_path: Path
) -> None:
    data = blob(5000)
    http_server.add("/missing.txt", data, status=404)
    http_server.add("/mirror.txt", data)
    sources = write_sources(
        tmp_path,
        {
            "one": {"x.txt": pin(http_server.url("/missing.txt"), data)},
            "two": {"y.txt": pin(http_server.url("/mirror.txt"), data)},
        },
    )
    report = run(sources, tmp_path)
    assert (tmp_path / "dest" / "one" / "x.txt").read_bytes() == data
    assert (tmp_path / "dest" / "two" / "y.txt").read_bytes() == data
    assert http_server.count("/missing.txt") == 1  # 404 is final: no retries, next URL
    assert http_server.count("/mirror.txt") == 1
    assert report.transferred_bytes == len(data)  # counted once, not per pin


def test_corrupted_bytes_are_a_hard_error(http_server: HTTPFixture, tmp_path: Path) -> None:
    good = blob(4096)
    bad = bytearray(good)
    bad[100] ^= 0xFF
    sources = one_file(http_server, tmp_path, good, serve=bytes(bad))
    with pytest.raises(IntegrityError) as info:
        run(sources, tmp_path)
    message = str(info.value)
    assert "src/f.txt" in message and sha(good) in message and sha(bytes(bad)) in message
    assert "\n" not in message
    assert http_server.count("/f.txt") == 1  # a mismatch is not retried
    assert files_under(tmp_path / "dest") == []
    # Nothing kept, not even a .part to resume from; only the (empty) lock file stays.
    assert _final_names(tmp_path / "cache") == []
    assert not any(p.name.endswith(".part") for p in files_under(tmp_path / "cache"))


@pytest.mark.parametrize("close_delimited", [False, True])
def test_wrong_size_is_a_hard_error(
    http_server: HTTPFixture, tmp_path: Path, close_delimited: bool
) -> None:
    good = blob(2000)
    sources = one_file(
        http_server, tmp_path, good, serve=good + b"extra", close_delimited=close_delimited
    )
    with pytest.raises(IntegrityError, match=r"size mismatch for src/f\.txt.*2000 bytes"):
        run(sources, tmp_path)
    assert http_server.count("/f.txt") == 1
    assert files_under(tmp_path / "dest") == []


def test_server_errors_are_retried(http_server: HTTPFixture, tmp_path: Path) -> None:
    data = blob(1000)
    http_server.add("/f.txt", data, fail_times=2, fail_status=500)
    http_server.add("/g.txt", blob(10, 9), fail_times=1, fail_status=503)
    sources = write_sources(
        tmp_path,
        {
            "src": {
                "f.txt": pin(http_server.url("/f.txt"), data),
                "g.txt": pin(http_server.url("/g.txt"), blob(10, 9)),
            }
        },
    )
    report = run(sources, tmp_path)
    assert [(f.path, f.attempts, f.action) for f in report.files] == [
        ("f.txt", 3, "downloaded"),
        ("g.txt", 2, "downloaded"),
    ]
    assert http_server.count("/f.txt") == 3
    assert (tmp_path / "dest" / "src" / "f.txt").read_bytes() == data


def test_retries_run_out(http_server: HTTPFixture, tmp_path: Path) -> None:
    data = blob(100)
    sources = one_file(http_server, tmp_path, data, fail_times=100)
    with pytest.raises(DownloadError, match="gave up after 3 attempts, last: HTTP 500"):
        run(sources, tmp_path, retries=2)
    assert http_server.count("/f.txt") == 3


def test_client_errors_are_not_retried(http_server: HTTPFixture, tmp_path: Path) -> None:
    data = blob(100)
    sources = one_file(http_server, tmp_path, data, status=403)
    with pytest.raises(DownloadError, match=r"src/f\.txt: HTTP 403"):
        run(sources, tmp_path)
    assert http_server.count("/f.txt") == 1


def test_connection_refused_is_retried_then_reported(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = blob(10)
    url = f"http://127.0.0.1:{port}/f.txt"
    sources = write_sources(tmp_path, {"src": {"f.txt": pin(url, data)}})
    with pytest.raises(DownloadError, match="gave up after 2 attempts, last: ConnectError"):
        run(sources, tmp_path, retries=1)


def test_retry_after_is_honoured(http_server: HTTPFixture, tmp_path: Path) -> None:
    data = blob(500)
    sources = one_file(http_server, tmp_path, data, fail_times=1, fail_status=429, retry_after="1")
    report = run(sources, tmp_path)
    first, second = http_server.requests_for("/f.txt")
    # A lower bound only: the client must not come back sooner than it was told.
    assert second.time - first.time >= 1.0
    assert report.files[0].attempts == 2


def test_retry_after_beyond_the_limit_fails_fast(http_server: HTTPFixture, tmp_path: Path) -> None:
    data = blob(500)
    sources = one_file(
        http_server, tmp_path, data, fail_times=1, fail_status=503, retry_after="3600"
    )
    policy = RetryPolicy(base_delay=0.01, max_delay=0.05, max_retry_after=60)
    with pytest.raises(DownloadError, match="retry after 3600s"):
        run(sources, tmp_path, retry_policy=policy)
    assert http_server.count("/f.txt") == 1


def test_parse_retry_after() -> None:
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after(" 0 ") == 0.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now=now) == 30.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now=now) == 0.0  # in the past
    assert parse_retry_after("soon") is None
    assert parse_retry_after("") is None
    assert parse_retry_after(None) is None


def test_backoff_grows_with_jitter_and_a_ceiling() -> None:
    import random

    policy = RetryPolicy(base_delay=1.0, max_delay=8.0)
    rng = random.Random(1)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)]:
        delays = [policy.backoff(attempt, rng) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 1


# --- resuming ----------------------------------------------------------------------------


def test_dropped_connection_resumes_with_range(http_server: HTTPFixture, tmp_path: Path) -> None:
    data = blob(200_000)
    sources = one_file(http_server, tmp_path, data, drop_after=50_000)
    report = run(sources, tmp_path)
    first, second = http_server.requests_for("/f.txt")
    assert first.range is None
    assert second.range == "bytes=50000-"
    assert (report.files[0].action, report.files[0].attempts) == ("resumed", 2)
    assert report.files[0].transferred == len(data)  # 50,000 then the other 150,000
    assert (tmp_path / "dest" / "src" / "f.txt").read_bytes() == data


def test_server_ignoring_range_gets_a_full_download(
    http_server: HTTPFixture, tmp_path: Path
) -> None:
    data = blob(100_000)
    sources = one_file(http_server, tmp_path, data, drop_after=30_000, honour_range=False)
    report = run(sources, tmp_path)
    assert http_server.requests_for("/f.txt")[1].range == "bytes=30000-"
    assert report.files[0].action == "downloaded"  # the 200 replaced the partial bytes
    assert (tmp_path / "dest" / "src" / "f.txt").read_bytes() == data


def test_part_left_by_an_earlier_run_is_resumed(http_server: HTTPFixture, tmp_path: Path) -> None:
    data = blob(80_000)
    http_server.add("/f.txt", data)
    part = ContentCache(tmp_path / "cache").part(sha(data))
    part.parent.mkdir(parents=True)
    part.write_bytes(data[:60_000])
    sources = write_sources(tmp_path, {"src": {"f.txt": pin(http_server.url("/f.txt"), data)}})
    report = run(sources, tmp_path)
    assert [r.range for r in http_server.requests_for("/f.txt")] == ["bytes=60000-"]
    assert (report.files[0].action, report.files[0].transferred) == ("resumed", 20_000)
    assert not part.exists()


def test_resume_onto_a_stale_prefix_falls_back_to_one_full_download(
    http_server: HTTPFixture, tmp_path: Path
) -> None:
    data = blob(80_000)
    http_server.add("/f.txt", data)
    part = ContentCache(tmp_path / "cache").part(sha(data))
    part.parent.mkdir(parents=True)
    part.write_bytes(blob(60_000, seed=99))  # e.g. an older upstream version of the file
    sources = write_sources(tmp_path, {"src": {"f.txt": pin(http_server.url("/f.txt"), data)}})
    report = run(sources, tmp_path)
    assert [r.range for r in http_server.requests_for("/f.txt")] == ["bytes=60000-", None]
    assert report.files[0].action == "downloaded"
    assert (tmp_path / "dest" / "src" / "f.txt").read_bytes() == data


# --- the cache ---------------------------------------------------------------------------


def test_cache_hit_makes_no_requests(http_server: HTTPFixture, tmp_path: Path) -> None:
    data = blob(9000)
    sources = one_file(http_server, tmp_path, data)
    run(sources, tmp_path)
    assert http_server.count() == 1
    other = tmp_path / "other-checkout"
    report = run(sources, tmp_path, dest=other)
    assert http_server.count() == 1
    result = report.files[0]
    assert (result.action, result.attempts, result.transferred) == ("cached", 0, 0)
    target = other / "src" / "f.txt"
    assert target.read_bytes() == data
    entry = ContentCache(tmp_path / "cache").entry(sha(data))
    if result.placed == "linked":
        assert target.stat().st_ino == entry.stat().st_ino
    # Running again over an intact destination leaves it alone.
    assert run(sources, tmp_path, dest=other).files[0].placed == "unchanged"


def test_copies_when_linking_is_off(http_server: HTTPFixture, tmp_path: Path) -> None:
    data = blob(100)
    sources = one_file(http_server, tmp_path, data)
    report = run(sources, tmp_path, link=False)
    target = tmp_path / "dest" / "src" / "f.txt"
    entry = ContentCache(tmp_path / "cache").entry(sha(data))
    assert report.files[0].placed == "copied"
    assert target.stat().st_ino != entry.stat().st_ino


def test_tampered_cache_entry_is_an_error_not_a_redownload(
    http_server: HTTPFixture, tmp_path: Path
) -> None:
    data = blob(3000)
    sources = one_file(http_server, tmp_path, data)
    run(sources, tmp_path, link=False)
    entry = ContentCache(tmp_path / "cache").entry(sha(data))
    entry.chmod(0o644)
    tampered = b"X" + data[1:]
    entry.write_bytes(tampered)
    with pytest.raises(IntegrityError) as info:
        run(sources, tmp_path, dest=tmp_path / "second")
    message = str(info.value)
    assert str(entry) in message and sha(data) in message and sha(tampered) in message
    assert http_server.count() == 1  # never silently fetched again
    assert entry.read_bytes() == tampered  # left for a person to inspect


def test_stale_destination_file_is_replaced_and_reported(
    http_server: HTTPFixture, tmp_path: Path
) -> None:
    data = blob(3000)
    sources = one_file(http_server, tmp_path, data)
    target = tmp_path / "dest" / "src" / "f.txt"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"an older pin's content")
    report = run(sources, tmp_path)
    assert report.files[0].replaced is True
    assert target.read_bytes() == data


def test_failed_run_writes_nothing_under_dest(http_server: HTTPFixture, tmp_path: Path) -> None:
    good, bad = blob(1000, 1), blob(1000, 2)
    http_server.add("/good.txt", good)
    http_server.add("/bad.txt", bad, serve=blob(1000, 3))
    sources = write_sources(
        tmp_path,
        {
            "src": {
                "good.txt": pin(http_server.url("/good.txt"), good),
                "bad.txt": pin(http_server.url("/bad.txt"), bad),
            }
        },
    )
    with pytest.raises(IntegrityError, match=r"src/bad\.txt"):
        run(sources, tmp_path)
    assert files_under(tmp_path / "dest") == []
    # The good file is verified in the cache, so fixing the pin needs no second download.
    assert ContentCache(tmp_path / "cache").entry(sha(good)).read_bytes() == good


def test_several_failures_are_all_reported(http_server: HTTPFixture, tmp_path: Path) -> None:
    a, b = blob(100, 1), blob(100, 2)
    http_server.add("/a.txt", a, status=404)
    http_server.add("/b.txt", b, serve=blob(100, 3))
    sources = write_sources(
        tmp_path,
        {
            "src": {
                "a.txt": pin(http_server.url("/a.txt"), a),
                "b.txt": pin(http_server.url("/b.txt"), b),
            }
        },
    )
    with pytest.raises(MultipleFetchErrors) as info:
        run(sources, tmp_path)
    assert {type(e) for e in info.value.errors} == {DownloadError, IntegrityError}
    assert "and 1 more failed file" in str(info.value)


# --- offline -----------------------------------------------------------------------------


def _refuse_connect(*_: object, **__: object) -> None:
    raise AssertionError("a socket was opened in offline mode")


@pytest.fixture
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _refuse_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _refuse_connect)


def test_offline_with_empty_cache_lists_every_missing_file(
    http_server: HTTPFixture, tmp_path: Path, no_sockets: None
) -> None:
    a, b, c = blob(10, 1), blob(20, 2), blob(30, 3)
    for name, data in (("/a", a), ("/b", b), ("/c", c)):
        http_server.add(name, data)
    sources = write_sources(
        tmp_path,
        {
            "one": {"a.txt": pin(http_server.url("/a"), a)},
            "two": {"b.txt": pin(http_server.url("/b"), b), "c.txt": pin(http_server.url("/c"), c)},
        },
    )
    with pytest.raises(OfflineError) as info:
        run(sources, tmp_path, offline=True)
    message = str(info.value)
    assert "3 file(s) not in cache" in message and str(tmp_path / "cache") in message
    assert "one/a.txt, two/b.txt, two/c.txt" in message
    assert info.value.missing == ["one/a.txt", "two/b.txt", "two/c.txt"]
    assert http_server.count() == 0
    assert files_under(tmp_path / "dest") == []


def test_offline_with_warm_cache_succeeds(
    http_server: HTTPFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = blob(500)
    http_server.add("/f", data)
    sources = write_sources(tmp_path, {"src": {"f.txt": pin(http_server.url("/f"), data)}})
    run(sources, tmp_path)
    monkeypatch.setattr(socket.socket, "connect", _refuse_connect)
    report = run(sources, tmp_path, dest=tmp_path / "offline", offline=True)
    assert report.files[0].action == "cached"
    assert http_server.count() == 1


# --- local sources -----------------------------------------------------------------------


def test_file_urls_and_plain_paths(tmp_path: Path, no_sockets: None) -> None:
    store = tmp_path / "store"
    store.mkdir()
    data = {name: blob(1000 + i, i) for i, name in enumerate(["abs.txt", "rel.txt", "url.txt"])}
    for name, content in data.items():
        (store / name).write_bytes(content)
    sources = write_sources(
        tmp_path,
        {
            "local": {
                "abs.txt": pin(str(store / "abs.txt"), data["abs.txt"]),
                "rel.txt": pin("store/rel.txt", data["rel.txt"]),  # relative to sources.yaml
                "url.txt": pin((store / "url.txt").as_uri(), data["url.txt"]),
            }
        },
    )
    assert validate_sources(sources) == []
    report = run(sources, tmp_path, offline=True)  # local copies need no network
    assert [(f.path, f.action) for f in report.files] == [
        ("abs.txt", "copied"),
        ("rel.txt", "copied"),
        ("url.txt", "copied"),
    ]
    for name, content in data.items():
        assert (tmp_path / "dest" / "local" / name).read_bytes() == content
    assert run(sources, tmp_path).counts() == {"cached": 3}


def test_local_source_with_wrong_bytes_or_missing(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_bytes(b"not what was pinned")
    sources = write_sources(tmp_path, {"local": {"x.txt": pin("x.txt", b"pinned bytes")}})
    with pytest.raises(IntegrityError, match=r"copied from .*x\.txt"):
        run(sources, tmp_path)
    (tmp_path / "x.txt").unlink()
    with pytest.raises(DownloadError, match="local source not found"):
        run(sources, tmp_path)


# --- concurrency -------------------------------------------------------------------------

_CHILD = """
import json, sys
from pathlib import Path
from agenteval.corpus.fetch import fetch_sources
report = fetch_sources(Path(sys.argv[1]), Path(sys.argv[2]), cache_dir=Path(sys.argv[3]),
                       progress=False, jobs=2)
print(json.dumps(report.counts()))
"""


def _final_names(root: Path) -> list[Path]:
    suffixes = (".part", ".tmp", ".lock")
    return [p for p in files_under(root) if not p.name.endswith(suffixes)]


def test_two_processes_share_a_cache_safely(http_server: HTTPFixture, tmp_path: Path) -> None:
    big, small = blob(1_500_000, 1), blob(40_000, 2)
    # Slow chunks make the two processes overlap for real.
    http_server.add("/big", big, chunk_size=32 * 1024, chunk_delay=0.005)
    http_server.add("/small", small, chunk_size=4096, chunk_delay=0.005)
    sources = write_sources(
        tmp_path,
        {
            "src": {
                "big.bin": pin(http_server.url("/big"), big),
                "small.bin": pin(http_server.url("/small"), small),
            }
        },
    )
    expected = {sha(big): big, sha(small): small}
    cache, dest = tmp_path / "cache", tmp_path / "dest"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(sources), str(dest), str(cache)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=tmp_path,
        )
        for _ in range(2)
    ]
    seen_whole = 0
    while any(child.poll() is None for child in children):
        # Anything under a final name must already be whole and verified.
        for path in _final_names(cache / "sha256") + _final_names(dest):
            try:
                content = path.read_bytes()
            except FileNotFoundError:
                continue
            assert sha(content) in expected, f"partial or wrong file visible at {path}"
            seen_whole += 1
        time.sleep(0.002)
    outputs = [child.communicate() for child in children]
    for child, (_, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err.decode()
    counts = [json.loads(out) for out, _ in outputs]
    assert sum(c.get("downloaded", 0) for c in counts) == 2  # each file fetched by one process
    assert http_server.count("/big") == 1 and http_server.count("/small") == 1
    assert (dest / "src" / "big.bin").read_bytes() == big
    assert (dest / "src" / "small.bin").read_bytes() == small
    leftovers = [p for p in files_under(tmp_path) if p.name.endswith((".part", ".tmp"))]
    assert leftovers == []


# --- the real sources file ---------------------------------------------------------------

DEBIAN_LICENSES = Path("/usr/share/common-licenses")
DEBIAN_NAMES = {
    "gpl-3.0.txt": "GPL-3",
    "lgpl-3.0.txt": "LGPL-3",
    "apache-2.0.txt": "Apache-2.0",
    "mpl-2.0.txt": "MPL-2.0",
    "cc0-1.0.txt": "CC0-1.0",
}


@pytest.mark.skipif(not DEBIAN_LICENSES.is_dir(), reason="needs Debian's common-licenses")
def test_eval_sources_fetch_through_a_local_mirror(
    http_server: HTTPFixture, tmp_path: Path
) -> None:
    """The real pins, served from local bytes: URLs are rewritten, never fetched."""
    sf = load_sources(REPO / "eval" / "sources.yaml")
    doc = sf.model_dump(by_alias=True)
    for name, rel, pin_ in sf.pins():
        http_server.add(f"/{name}/{rel}", (DEBIAN_LICENSES / DEBIAN_NAMES[rel]).read_bytes())
        entry = doc["sources"][name]["files"][rel]
        entry["url"] = http_server.url(f"/{name}/{rel}")
        entry["mirrors"] = []  # the Debian mirrors would win, and this test is about HTTP
        assert pin_.url.startswith("https://")
    mirrored = SourcesFile.model_validate(doc)
    report = run(mirrored, tmp_path)
    assert report.counts() == {"downloaded": len(DEBIAN_NAMES)}
    assert (
        (tmp_path / "dest" / "gnu_licenses" / "gpl-3.0.txt")
        .read_bytes()
        .startswith(b"                    GNU GENERAL PUBLIC LICENSE")
    )
    assert corpus_files_digest(mirrored) == corpus_files_digest(REPO / "eval" / "sources.yaml")


# --- small pieces ------------------------------------------------------------------------


def test_corpus_files_digest_tracks_pins_only(tmp_path: Path) -> None:
    data = blob(10)
    (tmp_path / "a").mkdir()
    base = write_sources(tmp_path / "a", {"s": {"x.txt": pin("https://e.org/x", data)}})
    (tmp_path / "b").mkdir()
    moved = write_sources(tmp_path / "b", {"s": {"x.txt": pin("https://mirror.org/x", data)}})
    (tmp_path / "c").mkdir()
    changed = write_sources(tmp_path / "c", {"s": {"x.txt": pin("https://e.org/x", blob(11))}})
    digest = corpus_files_digest(base)
    assert len(digest) == 64
    assert corpus_files_digest(moved) == digest
    assert corpus_files_digest(changed) != digest
    manual = hashlib.sha256(f"s/x.txt\t{sha(data)}\n".encode()).hexdigest()
    assert digest == manual


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTEVAL_CACHE", str(tmp_path / "env"))
    assert default_cache_dir() == tmp_path / "env"
    monkeypatch.delenv("AGENTEVAL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "agenteval" / "corpora"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "agenteval" / "corpora"


def test_default_cache_is_used_without_cache_dir(http_server: HTTPFixture, tmp_path: Path) -> None:
    data = blob(10)
    http_server.add("/f", data)
    sources = write_sources(tmp_path, {"src": {"f.txt": pin(http_server.url("/f"), data)}})
    report = run(sources, tmp_path, cache_dir=None)
    assert report.cache_dir == tmp_path / "default-cache"
    assert ContentCache(tmp_path / "default-cache").entry(sha(data)).is_file()


def test_progress_is_silent_without_a_terminal(
    http_server: HTTPFixture, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    data = blob(10)
    http_server.add("/f", data)
    sources = write_sources(tmp_path, {"src": {"f.txt": pin(http_server.url("/f"), data)}})
    run(sources, tmp_path, progress=True)
    assert capfd.readouterr().err == ""


def test_fetch_refuses_invalid_sources(tmp_path: Path) -> None:
    path = tmp_path / "sources.yaml"
    bad = {"url": "https://e.org/a", "sha256": "nope", "bytes": 1}
    demo = {"title": "D", "homepage": "https://e.org/", "license": "x", "files": {"a.txt": bad}}
    doc = {"sources": {"demo": demo}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(SourcesInvalid, match=r"sources\.yaml:\d+: .*sha256") as info:
        run(path, tmp_path)
    assert isinstance(info.value, FetchError)
    with pytest.raises(SourcesInvalid, match="cannot read"):
        run(tmp_path / "missing.yaml", tmp_path)


def test_jobs_must_be_positive(tmp_path: Path) -> None:
    sources = write_sources(tmp_path, {"s": {"x.txt": pin("x.txt", b"x")}})
    with pytest.raises(ValueError, match="jobs"):
        run(sources, tmp_path, jobs=0)
