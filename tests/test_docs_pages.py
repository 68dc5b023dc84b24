"""The doc test for the pages README.md does not point at (tests/test_docs.py says how a page
is run, and runs README with the pages its blocks name): a file of its own, so that CI's
xdist workers, one file each, run the two halves side by side."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_docs import ROOT, RUNNABLE_PAGES, WITH_README, Pages, check_page, session_folder


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Pages:
    return Pages(tmp_path_factory.mktemp("docs-pages"), session_folder(tmp_path_factory))


@pytest.mark.timeout(3600)
@pytest.mark.parametrize(
    "page",
    [page for page in RUNNABLE_PAGES if page not in WITH_README],
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_the_commands_of_a_page_run_and_print_what_it_shows(page: Path, pages: Pages) -> None:
    check_page(page, pages)
