"""The pins between runs: `agenteval fetch --verify` re-hashes every laid-out file and its
cache entry and names each one that is missing or wrong; the DVC `fetch` stage fails on a
file the network keeps away (so the next repro tries again) unless fetch.allow_missing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from test_fetch import _isolated_cache, blob, pin, run, write_sources
from test_fetch_mirrors import closed_port_url
from typer.testing import CliRunner, Result

from agenteval.cli import app
from agenteval.corpus.cache import ContentCache

__all__ = ["_isolated_cache"]  # re-exported so pytest sees the autouse fixture


def verify(sources: Path, dest: Path) -> Result:
    return CliRunner().invoke(
        app, ["fetch", "--verify", "--sources", str(sources), "--dest", str(dest)]
    )


def laid_out(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """Three local files fetched into tmp/dest through the default (isolated) cache."""
    data = {name: blob(2000 + i, i) for i, name in enumerate(("a.txt", "b.txt", "c.txt"))}
    for name, content in data.items():
        (tmp_path / name).write_bytes(content)
    sources = write_sources(
        tmp_path, {"src": {name: pin(str(tmp_path / name), c) for name, c in data.items()}}
    )
    run(sources, tmp_path, cache_dir=tmp_path / "default-cache")
    return sources, data


def test_verify_answers_all_match_when_every_file_holds_its_pin(tmp_path: Path) -> None:
    sources, _ = laid_out(tmp_path)
    result = verify(sources, tmp_path / "dest")
    assert result.exit_code == 0, result.output
    assert "verified 3 pinned file(s), 6,003 bytes" in result.output
    assert result.output.strip().endswith(": all match")


def test_verify_names_every_missing_changed_or_corrupt_file(tmp_path: Path) -> None:
    sources, data = laid_out(tmp_path)
    dest = tmp_path / "dest/src"
    (dest / "a.txt").unlink()
    changed = bytearray(data["b.txt"])
    changed[100] ^= 1  # same size: only the digest can tell
    (dest / "b.txt").unlink()
    (dest / "b.txt").write_bytes(bytes(changed))
    entry = ContentCache(tmp_path / "default-cache").entry(pin("", data["c.txt"])["sha256"])
    entry.chmod(0o644)
    entry.write_bytes(data["c.txt"][:-1] + b"!")  # the cache entry itself tampered with
    result = verify(sources, tmp_path / "dest")
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert f"{dest / 'a.txt'}: missing: src/a.txt is not laid out (run `agenteval fetch`)" in lines
    assert any(
        line.startswith(f"{dest / 'b.txt'}: sha256 mismatch for src/b.txt") for line in lines
    )
    # c's destination is a hardlink of the entry: both are named, the entry with what to do.
    assert any(
        line.startswith(f"{dest / 'c.txt'}: sha256 mismatch for src/c.txt") for line in lines
    )
    assert any(line.startswith(f"{entry}: sha256 mismatch") and "remove this cache entry" in line
               for line in lines)  # fmt: skip
    assert result.output.strip().endswith(": 4 fault(s)")  # b's intact cache entry is none
    b_entry = ContentCache(tmp_path / "default-cache").entry(pin("", data["b.txt"])["sha256"])
    assert not any(line.startswith(str(b_entry)) for line in lines)


def test_verify_refuses_an_invalid_sources_file(tmp_path: Path) -> None:
    bad = tmp_path / "sources.yaml"
    bad.write_text("sources: [not, a, mapping]\n")
    result = verify(bad, tmp_path / "dest")
    assert result.exit_code == 2 and "error:" in result.output
    assert "Traceback" not in result.output


@pytest.fixture()
def stage_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with one reachable file and one on a closed port, as DVC runs a stage."""
    here = blob(500, 1)
    (tmp_path / "here.txt").write_bytes(here)
    (tmp_path / "eval").mkdir()
    write_sources(
        tmp_path / "eval",
        {"src": {"here.txt": pin(str(tmp_path / "here.txt"), here),
                 "gone.txt": pin(closed_port_url("/gone.txt"), blob(10, 2))}},
    )  # fmt: skip
    monkeypatch.chdir(tmp_path)
    return tmp_path


def set_allow_missing(root: Path, value: bool) -> None:
    (root / "params.yaml").write_text(yaml.safe_dump({"fetch": {"allow_missing": value}}))


def test_the_fetch_stage_fails_on_an_unreachable_file_and_names_it(
    stage_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from stages import fetch as stage

    set_allow_missing(stage_root, False)
    assert stage.main() == 2
    err = capsys.readouterr().err
    assert "src/gone.txt" in err and "the next `dvc repro` tries again" in err
    assert "set fetch.allow_missing: true in params.yaml" in err
    assert not (stage_root / "data/corpora").exists()  # a failed fetch writes nothing


def test_allow_missing_lays_out_the_rest_and_verify_keeps_naming_the_gap(
    stage_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from stages import fetch as stage

    set_allow_missing(stage_root, True)
    assert stage.main() == 0
    out = capsys.readouterr()
    assert "1 missing: src/gone.txt" in out.out
    assert "missing (fetch.allow_missing is true): src/gone.txt" in out.err
    assert (stage_root / "data/corpora/src/here.txt").is_file()
    result = verify(stage_root / "eval/sources.yaml", stage_root / "data/corpora")
    assert result.exit_code == 1 and "missing: src/gone.txt is not laid out" in result.output
