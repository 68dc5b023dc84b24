"""GroupCommitWriter: atomic files made durable a batch at a time through a journal."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from agenteval import fileio
from agenteval.fileio import GroupCommitWriter, group_commit, json_text


def test_many_files_few_fsyncs_and_no_journal_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(fileio.os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    journal = tmp_path / ".out.journal"

    async def main() -> GroupCommitWriter:
        async with group_commit(journal, max_batch=16, max_delay_s=0.05) as writer:
            await asyncio.gather(
                *(writer.write(tmp_path / "out" / f"{i}.json", {"i": i}) for i in range(100))
            )
            assert journal.is_file()  # the journal is what made them durable
        return writer

    writer = asyncio.run(main())
    for i in range(100):
        assert json.loads((tmp_path / "out" / f"{i}.json").read_text()) == {"i": i}
    assert writer.commits == len(synced) and writer.commits <= 100 / 16 + 1
    assert not journal.exists() and not list(tmp_path.rglob("*.tmp"))


def test_recover_restores_journaled_files_and_skips_a_torn_line(tmp_path: Path) -> None:
    journal = tmp_path / ".out.journal"
    kept, lost, torn = (tmp_path / "out" / f"{n}.json" for n in ("kept", "lost", "torn"))
    lines = [{"path": f"out/{p.name}", "text": json_text({"name": p.stem})} for p in (kept, lost)]
    lines.append({"path": "../outside.json", "text": "{}"})  # never written outside the folder
    journal.write_text(
        "".join(json.dumps(line) + "\n" for line in lines)
        + json.dumps({"path": "out/torn.json", "text": "{}"})[:20],  # killed mid-append
        encoding="utf-8",
    )
    kept.parent.mkdir()
    kept.write_text(json_text({"name": "kept"}))
    lost.write_text("")  # a file that did not survive a power cut
    writer = GroupCommitWriter(journal)
    assert writer.recover() == 1
    assert json.loads(lost.read_text()) == {"name": "lost"}
    assert json.loads(kept.read_text()) == {"name": "kept"}
    assert not torn.exists() and not journal.exists()
    assert not (tmp_path.parent / "outside.json").exists()


def test_a_failed_commit_reaches_every_writer_of_its_batch(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")

    async def main() -> list[BaseException | None]:
        async with group_commit(tmp_path / ".j.journal", max_delay_s=0.05) as writer:
            return await asyncio.gather(
                writer.write(blocker / "a.json", 1),  # its folder is a file: cannot be written
                writer.write(tmp_path / "b.json", 2),
                return_exceptions=True,
            )

    results = asyncio.run(main())
    assert all(isinstance(r, OSError) for r in results)
