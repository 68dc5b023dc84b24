"""Fetching without the network: mirrors, allow_missing, and the short connect-retry budget.

Real sockets on 127.0.0.1 only; "unreachable" is a closed local port, and DNS failures are
simulated with an httpx mock transport so nothing ever resolves a real name.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_fixture import HTTPFixture, http_server
from test_fetch import _isolated_cache, blob, no_sockets, pin, run, sha, write_sources

from agenteval.corpus.cache import ContentCache
from agenteval.corpus.download import RetryPolicy
from agenteval.corpus.errors import DownloadError, IntegrityError, NetworkError, OfflineError
from agenteval.corpus.fetch import MissingFile
from agenteval.schema.sources import load_sources

# Re-exported so pytest sees the fixtures in this module (the cache one is autouse).
__all__ = ["_isolated_cache", "http_server", "no_sockets"]

REPO = Path(__file__).resolve().parents[1]
DEBIAN_LICENSES = Path("/usr/share/common-licenses")


def mirrored(url: str, data: bytes, *mirrors: str) -> dict[str, Any]:
    return {**pin(url, data), "mirrors": list(mirrors)}


def closed_port_url(path: str = "/f.txt") -> str:
    """A URL on a port that was free a moment ago: connecting is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


class Sleeps(list[float]):
    """Records the delays fetch asks for instead of sleeping: no wall clock in these tests."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def dns_failure_client(calls: list[str]) -> httpx.Client:
    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        raise httpx.ConnectError("[Errno -3] Temporary failure in name resolution", request=request)

    return httpx.Client(transport=httpx.MockTransport(handler))


# --- mirrors -----------------------------------------------------------------------------


def test_local_mirrors_are_used_before_the_url(http_server: HTTPFixture, tmp_path: Path) -> None:
    a, b = blob(3000, 1), blob(4000, 2)
    http_server.add("/a.txt", a)
    http_server.add("/b.txt", b)
    (tmp_path / "a-copy.txt").write_bytes(a)
    (tmp_path / "b-copy.txt").write_bytes(b)
    sources = write_sources(
        tmp_path,
        {
            "src": {
                # a relative path (from the sources file's directory) and a file:// URL
                "a.txt": mirrored(http_server.url("/a.txt"), a, "a-copy.txt"),
                "b.txt": mirrored(http_server.url("/b.txt"), b, (tmp_path / "b-copy.txt").as_uri()),
            }
        },
    )
    report = run(sources, tmp_path)
    assert report.counts() == {"copied": 2}
    assert http_server.count() == 0
    assert (tmp_path / "dest" / "src" / "a.txt").read_bytes() == a
    assert (tmp_path / "dest" / "src" / "b.txt").read_bytes() == b


def test_absent_local_mirror_is_skipped_silently(http_server: HTTPFixture, tmp_path: Path) -> None:
    data = blob(1000)
    http_server.add("/f.txt", data)
    entry = mirrored(http_server.url("/f.txt"), data, str(tmp_path / "not-here.txt"))
    report = run(write_sources(tmp_path, {"src": {"f.txt": entry}}), tmp_path)
    assert [(f.action, f.attempts) for f in report.files] == [("downloaded", 1)]


def test_stale_mirror_does_not_hide_a_good_url(http_server: HTTPFixture, tmp_path: Path) -> None:
    data = blob(2000)
    http_server.add("/f.txt", data)
    (tmp_path / "stale.txt").write_bytes(blob(2000, seed=5))  # right size, other bytes
    entry = mirrored(http_server.url("/f.txt"), data, "stale.txt")
    report = run(write_sources(tmp_path, {"src": {"f.txt": entry}}), tmp_path)
    assert report.files[0].action == "downloaded"
    assert http_server.count("/f.txt") == 1
    assert (tmp_path / "dest" / "src" / "f.txt").read_bytes() == data
    assert ContentCache(tmp_path / "cache").entry(sha(data)).read_bytes() == data


def test_remote_mirrors_come_after_the_url(http_server: HTTPFixture, tmp_path: Path) -> None:
    a, b = blob(500, 1), blob(600, 2)
    http_server.add("/gone.txt", a, status=404)
    http_server.add("/mirror-a.txt", a)
    http_server.add("/b.txt", b)
    http_server.add("/mirror-b.txt", b)
    url = http_server.url
    a_pin = mirrored(url("/gone.txt"), a, url("/mirror-a.txt"))
    b_pin = mirrored(url("/b.txt"), b, url("/mirror-b.txt"))
    sources = write_sources(tmp_path, {"src": {"a.txt": a_pin, "b.txt": b_pin}})
    report = run(sources, tmp_path, jobs=1)
    assert report.counts() == {"downloaded": 2}
    paths = [r.path for r in http_server.requests]
    assert paths.index("/gone.txt") < paths.index("/mirror-a.txt")
    assert http_server.count("/mirror-b.txt") == 0  # the url answered: no mirror needed


def test_stale_mirror_alone_is_an_integrity_error(tmp_path: Path, no_sockets: None) -> None:
    data, stale = blob(800), blob(800, seed=3)
    (tmp_path / "stale.txt").write_bytes(stale)
    entry = mirrored("https://corpus.example/f.txt", data, "stale.txt")
    sources = write_sources(tmp_path, {"src": {"f.txt": entry}})
    for allow_missing in (False, True):  # a mismatch is never "missing"
        with pytest.raises(IntegrityError) as info:
            run(sources, tmp_path, offline=True, allow_missing=allow_missing)
        message = str(info.value)
        assert "src/f.txt" in message and "mirror" in message and "stale.txt" in message
        assert sha(data) in message and sha(stale) in message
    assert not (tmp_path / "dest").exists()


def test_stale_mirror_is_reported_with_what_the_url_said(
    http_server: HTTPFixture, tmp_path: Path
) -> None:
    data, stale = blob(800), blob(800, seed=3)
    http_server.add("/f.txt", data, status=404)
    (tmp_path / "stale.txt").write_bytes(stale)
    entry = mirrored(http_server.url("/f.txt"), data, "stale.txt")
    with pytest.raises(IntegrityError) as info:
        run(write_sources(tmp_path, {"src": {"f.txt": entry}}), tmp_path)
    assert sha(stale) in str(info.value) and "also tried" in str(info.value)
    assert "HTTP 404" in str(info.value)
    assert "\n" not in str(info.value)


# --- allow_missing -----------------------------------------------------------------------


def test_allow_missing_lists_unreachable_files_and_lays_out_the_rest(
    http_server: HTTPFixture, tmp_path: Path
) -> None:
    good = blob(1500, 1)
    http_server.add("/good.txt", good)
    gone = blob(700, 2)
    sources = write_sources(
        tmp_path,
        {
            "src": {
                "good.txt": pin(http_server.url("/good.txt"), good),
                "gone.txt": pin(closed_port_url(), gone),
            }
        },
    )
    with pytest.raises(NetworkError, match="ConnectError"):  # the default stays strict
        run(sources, tmp_path)
    assert not (tmp_path / "dest").exists()

    report = run(sources, tmp_path, allow_missing=True)
    assert [(f.path, f.action) for f in report.files] == [("good.txt", "cached")]
    (missing,) = report.missing
    assert (missing.source, missing.path, missing.sha256, missing.bytes) == (
        "src",
        "gone.txt",
        sha(gone),
        len(gone),
    )
    assert "ConnectError" in missing.reason and "gave up after" in missing.reason
    assert str(missing) == f"src/gone.txt: {missing.reason}"
    assert not missing.reason.startswith("src/gone.txt")  # the label is not repeated
    assert report.summary().endswith("; 1 missing: src/gone.txt")
    assert json.loads(json.dumps(report.as_dict()))["missing"][0]["path"] == "gone.txt"
    assert (tmp_path / "dest" / "src" / "good.txt").read_bytes() == good
    assert not (tmp_path / "dest" / "src" / "gone.txt").exists()


def test_allow_missing_does_not_excuse_a_broken_pin(
    http_server: HTTPFixture, tmp_path: Path
) -> None:
    a, b = blob(100, 1), blob(100, 2)
    http_server.add("/a.txt", a, status=404)  # the pin needs fixing; the network is fine
    http_server.add("/b.txt", b, serve=blob(100, 3))
    only_a = write_sources(tmp_path, {"src": {"a.txt": pin(http_server.url("/a.txt"), a)}})
    with pytest.raises(DownloadError, match="HTTP 404") as info:
        run(only_a, tmp_path, allow_missing=True)
    assert not isinstance(info.value, NetworkError)
    (tmp_path / "b").mkdir()
    only_b = write_sources(tmp_path / "b", {"src": {"b.txt": pin(http_server.url("/b.txt"), b)}})
    with pytest.raises(IntegrityError):
        run(only_b, tmp_path, allow_missing=True)


def test_allow_missing_when_any_location_failed_for_network_reasons(
    http_server: HTTPFixture, tmp_path: Path
) -> None:
    data = blob(100)
    http_server.add("/moved.txt", data, status=404)
    entry = mirrored(http_server.url("/moved.txt"), data, closed_port_url("/mirror.txt"))
    report = run(write_sources(tmp_path, {"src": {"f.txt": entry}}), tmp_path, allow_missing=True)
    (missing,) = report.missing
    assert "every location failed" in missing.reason
    assert "HTTP 404" in missing.reason and "ConnectError" in missing.reason  # both told


def test_offline_allow_missing_still_uses_local_mirrors(tmp_path: Path, no_sockets: None) -> None:
    local, remote = blob(900, 1), blob(300, 2)
    (tmp_path / "copy.txt").write_bytes(local)
    sources = write_sources(
        tmp_path,
        {
            "src": {
                "local.txt": mirrored("https://corpus.example/local.txt", local, "copy.txt"),
                "remote.txt": pin("https://corpus.example/remote.txt", remote),
            }
        },
    )
    with pytest.raises(OfflineError) as info:  # without allow_missing: the old strict error
        run(sources, tmp_path, offline=True)
    assert info.value.missing == ["src/remote.txt"]

    report = run(sources, tmp_path, offline=True, allow_missing=True)
    assert [(f.path, f.action) for f in report.files] == [("local.txt", "cached")]
    assert report.missing == (
        MissingFile("src", "remote.txt", sha(remote), len(remote), report.missing[0].reason),
    )
    assert report.missing[0].reason.startswith("offline")
    assert (tmp_path / "dest" / "src" / "local.txt").read_bytes() == local


def test_offline_allow_missing_copies_on_first_run(tmp_path: Path, no_sockets: None) -> None:
    data = blob(900)
    (tmp_path / "copy.txt").write_bytes(data)
    entry = mirrored("https://corpus.example/f.txt", data, "copy.txt")
    report = run(
        write_sources(tmp_path, {"src": {"f.txt": entry}}),
        tmp_path,
        offline=True,
        allow_missing=True,
    )
    assert report.counts() == {"copied": 1} and report.missing == ()


# --- connect failures: a short budget ----------------------------------------------------


def test_refused_connections_get_a_few_short_retries(tmp_path: Path) -> None:
    sleeps = Sleeps()
    policy = RetryPolicy(base_delay=2.0, max_delay=30.0, connect_delay=0.05, sleep=sleeps, seed=1)
    sources = write_sources(tmp_path, {"src": {"f.txt": pin(closed_port_url(), blob(10))}})
    with pytest.raises(NetworkError, match="gave up after 3 attempts, last: ConnectError"):
        run(sources, tmp_path, retry_policy=policy, retries=5)
    assert len(sleeps) == 2 and all(0 < s <= 0.05 for s in sleeps)


def test_dns_failure_is_a_connect_failure(tmp_path: Path, no_sockets: None) -> None:
    calls: list[str] = []
    sleeps = Sleeps()
    policy = RetryPolicy(base_delay=2.0, connect_retries=1, connect_delay=0.1, sleep=sleeps)
    url = "https://corpus.example/f.txt"
    sources = write_sources(tmp_path, {"src": {"f.txt": pin(url, blob(10))}})
    with dns_failure_client(calls) as client:
        report = run(sources, tmp_path, client=client, retry_policy=policy, allow_missing=True)
    assert calls == [url, url]
    assert sleeps == [0.1]
    assert "name resolution" in report.missing[0].reason


def test_server_errors_and_timeouts_keep_the_full_backoff(
    http_server: HTTPFixture, tmp_path: Path
) -> None:
    sleeps = Sleeps()
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0, connect_delay=0.01, sleep=sleeps, seed=2)
    sources = write_sources(tmp_path, {"src": {"f.txt": pin(http_server.url("/f.txt"), blob(50))}})
    http_server.add("/f.txt", blob(50), fail_times=3, fail_status=503)
    run(sources, tmp_path, retry_policy=policy)
    assert len(sleeps) == 3 and all(s >= 0.5 for s in sleeps)  # backoff, not connect_delay

    sleeps.clear()
    calls: list[str] = []

    def timeout(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        raise httpx.ConnectTimeout("timed out", request=request)

    (tmp_path / "t").mkdir()
    url = "https://corpus.example/t.txt"
    slow = write_sources(tmp_path / "t", {"src": {"t.txt": pin(url, blob(60))}})
    gave_up = "gave up after 5 attempts, last: ConnectTimeout"
    with (
        httpx.Client(transport=httpx.MockTransport(timeout)) as client,
        pytest.raises(NetworkError, match=gave_up),
    ):
        run(slow, tmp_path, client=client, retry_policy=policy, retries=4)
    assert len(calls) == 5 and len(sleeps) == 4 and all(s >= 0.5 for s in sleeps)


# --- the real sources file ---------------------------------------------------------------


@pytest.mark.skipif(not DEBIAN_LICENSES.is_dir(), reason="needs Debian's common-licenses")
def test_eval_sources_fetch_offline_from_the_debian_mirrors(
    tmp_path: Path, no_sockets: None
) -> None:
    sources = REPO / "eval" / "sources.yaml"
    report = run(sources, tmp_path, offline=True)
    pins = list(load_sources(sources).pins())
    assert report.counts() == {"copied": len(pins)} and report.missing == ()
    gpl = (tmp_path / "dest" / "gnu_licenses" / "gpl-3.0.txt").read_bytes()
    assert gpl == (DEBIAN_LICENSES / "GPL-3").read_bytes()
