"""Progress for `agenteval fetch`: one rich bar over all bytes, shown only on a terminal."""

from __future__ import annotations

import threading

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)


class ProgressBar:
    """rich progress (bytes, with files in the label) on an interactive stderr, else nothing."""

    def __init__(self, enabled: bool, files: int, total_bytes: int) -> None:
        self._files, self._done = files, 0
        self._lock = threading.Lock()
        self._progress: Progress | None = None
        self._task = TaskID(0)
        console = Console(stderr=True)
        if enabled and console.is_terminal:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=console,
            )
            self._task = self._progress.add_task(self._label(), total=total_bytes)

    def _label(self) -> str:
        return f"corpora {self._done}/{self._files} files"

    def __enter__(self) -> ProgressBar:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, n: int) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def files_done(self, n: int) -> None:
        with self._lock:
            self._done += n
            if self._progress is not None:
                self._progress.update(self._task, description=self._label())
