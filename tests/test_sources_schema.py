"""eval/sources.yaml validation: every bad field reported with its line, mirrors included."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agenteval.schema.sources import load_sources, validate_sources

REPO = Path(__file__).resolve().parents[1]

GOOD_SHA = "ab" * 32
HEADER = """\
sources:
  demo:
    title: Demo
    homepage: https://example.org/
    license: CC0-1.0
    files:
"""  # the files block starts on line 7


def _problems(tmp_path: Path, files_block: str, header: str = HEADER) -> list[str]:
    path = tmp_path / "sources.yaml"
    path.write_text(header + textwrap.indent(textwrap.dedent(files_block), " " * 6))
    return [str(p) for p in validate_sources(path, display="sources.yaml")]


def e(
    path: str = "a.txt", url: str = "https://e.org/a", sha256: str = GOOD_SHA, size: Any = 1
) -> str:
    """One pin as a one-line YAML flow mapping."""
    return f"{path}: {{url: '{url}', sha256: {sha256}, bytes: {size}}}\n"


F = "sources.demo.files"
BAD_FIELDS = [
    (e(url="ftp://example.org/a"), f"7: {F}.a.txt.url: url scheme 'ftp' is not supported"),
    (e(url="https://"), f"7: {F}.a.txt.url: url 'https://' has no host"),
    (e(sha256=GOOD_SHA.upper()), f"7: {F}.a.txt.sha256: sha256 must be 64 lowercase hex"),
    (e(sha256="abc123"), f"7: {F}.a.txt.sha256: sha256 must be 64 lowercase hex"),
    (e(size=0), f"7: {F}.a.txt.bytes: bytes must be a positive size, got 0"),
    (e(size=-3), f"7: {F}.a.txt.bytes: bytes must be a positive size, got -3"),
    (e(size="'12'"), f"7: {F}.a.txt.bytes: Input should be a valid integer"),
    (e("/etc/passwd"), f"7: {F}./etc/passwd: destination '/etc/passwd' is absolute"),
    (e("../up.txt"), f"7: {F}.../up.txt: destination '../up.txt' escapes the source directory"),
    (e("a/../../b.txt"), f"7: {F}.a/../../b.txt: destination 'a/../../b.txt' escapes"),
    (e("a//b.txt"), f"7: {F}.a//b.txt: destination 'a//b.txt' is not normalised"),
    (
        e("'C:/x.txt'"),
        f"7: {F}.C:/x.txt: destination 'C:/x.txt' contains a backslash, ':'",
    ),
    (
        e() + e("b.txt", sha256="cd" * 32) + e(url="https://e.org/c", sha256="ef" * 32),
        f"9: {F}.a.txt: duplicate destination path 'a.txt' (first at line 7)",
    ),
    (e("a") + e("a/b.txt", sha256="cd" * 32), f"8: {F}.a/b.txt: duplicate destination: 'a/b.txt'"),
    (e() + e("b.txt", sha256="cd" * 32), f"8: {F}.b.txt.url: url also pinned by demo/a.txt"),
    (
        e() + e("b.txt", url="https://e.org/b", size=2),
        f"8: {F}.b.txt.bytes: same sha256 as demo/a.txt but 2 bytes",
    ),
    (e(size="1, size: 1"), f"7: {F}.a.txt.size: Extra inputs are not permitted"),
    (f"a.txt: {{sha256: {GOOD_SHA}, bytes: 1}}", f"7: {F}.a.txt.url: Field required"),
    (f"a.txt:\n  url: x.txt\n  sha256: {GOOD_SHA}\n  bytes: 0\n", f"10: {F}.a.txt.bytes: bytes"),
    ("{}", "6: sources.demo.files: Dictionary should have at least 1 item"),
]


@pytest.mark.parametrize(("files_block", "expected"), BAD_FIELDS)
def test_validation_reports_each_bad_field(tmp_path: Path, files_block: str, expected: str) -> None:
    problems = _problems(tmp_path, files_block)
    assert any(p.startswith(f"sources.yaml:{expected}") for p in problems), problems


def test_validation_of_source_level_fields(tmp_path: Path) -> None:
    header = textwrap.dedent("""\
        sources:
          Bad-Name:
            title: Demo
            homepage: ftp://example.org/
            license: CC0-1.0
            files:
        """)
    block = f"a.txt: {{url: 'https://e.org/a', sha256: {GOOD_SHA}, bytes: 1}}"
    problems = _problems(tmp_path, block, header)
    assert any("sources.yaml:2: sources.Bad-Name: source name 'Bad-Name'" in p for p in problems)
    assert any("sources.yaml:4: sources.Bad-Name.homepage:" in p for p in problems)


def test_validation_warnings_do_not_block_loading(tmp_path: Path) -> None:
    block = (
        f"A.txt: {{url: 'https://e.org/a', sha256: {GOOD_SHA}, bytes: 1}}\n"
        f"a.txt: {{url: 'https://e.org/b', sha256: {'cd' * 32}, bytes: 2}}\n"
        f"c.txt: {{url: 'not-here.txt', sha256: {'ef' * 32}, bytes: 3}}\n"
    )
    path = tmp_path / "sources.yaml"
    path.write_text(HEADER + textwrap.indent(block, " " * 6))
    problems = validate_sources(path)
    assert {p.severity for p in problems} == {"warning"}
    assert any("case-insensitive" in p.message for p in problems)
    assert any("does not exist" in p.message for p in problems)
    assert len(list(load_sources(path).pins())) == 3


def test_broken_yaml_is_reported_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "sources.yaml"
    path.write_text("sources:\n  demo: [unclosed\n")
    problems = validate_sources(path)
    assert problems and problems[0].line >= 2 and "invalid YAML" in problems[0].message


# --- mirrors -----------------------------------------------------------------------------

MIRRORED = f"""\
a.txt:
  url: https://e.org/a
  sha256: {GOOD_SHA}
  bytes: 1
  mirrors:
"""  # mirror entries start on line 12


def _mirrors(*entries: str) -> str:
    return MIRRORED + "".join(f"    - '{entry}'\n" for entry in entries)


def test_mirrors_are_optional_and_parsed_in_order(tmp_path: Path) -> None:
    path = tmp_path / "sources.yaml"
    path.write_text(HEADER + textwrap.indent(_mirrors("/nowhere/a", "https://m.org/a"), " " * 6))
    assert validate_sources(path) == []  # a local mirror absent here is not even a warning
    ((_, _, mirrored),) = load_sources(path).pins()
    assert mirrored.mirrors == ["/nowhere/a", "https://m.org/a"]
    assert mirrored.locations() == ["https://e.org/a", "/nowhere/a", "https://m.org/a"]
    path.write_text(HEADER + "      " + e())
    ((_, _, plain),) = load_sources(path).pins()
    assert plain.mirrors == []


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (("ftp://m.org/a",), f"12: {F}.a.txt.mirrors.0: url scheme 'ftp' is not supported"),
        (("/ok", "https://"), f"13: {F}.a.txt.mirrors.1: url 'https://' has no host"),
        (("file://host/a",), f"12: {F}.a.txt.mirrors.0: file URL 'file://host/a' names a remote"),
    ],
)
def test_bad_mirrors_are_errors_at_their_line(
    tmp_path: Path, entries: tuple[str, ...], expected: str
) -> None:
    problems = _problems(tmp_path, _mirrors(*entries))
    assert any(p.startswith(f"sources.yaml:{expected}") for p in problems), problems


def test_repeated_mirror_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "sources.yaml"
    block = _mirrors("https://e.org/a", "/x", "/x")
    path.write_text(HEADER + textwrap.indent(block, " " * 6))
    problems = validate_sources(path)
    assert [(p.severity, p.line) for p in problems] == [("warning", 12), ("warning", 14)]
    assert all("listed twice" in p.message for p in problems)
    assert len(list(load_sources(path).pins())) == 1


# --- the real sources file ---------------------------------------------------------------

DEBIAN_LICENSES = Path("/usr/share/common-licenses")


def test_eval_sources_yaml_is_valid_and_uses_https() -> None:
    path = REPO / "eval" / "sources.yaml"
    assert validate_sources(path) == []
    pins = list(load_sources(path).pins())
    assert 4 <= len(pins) <= 6
    assert all(p.url.startswith("https://") for _, _, p in pins)
    assert all(p.mirrors for _, _, p in pins)  # every text has a local copy to try first


@pytest.mark.skipif(not DEBIAN_LICENSES.is_dir(), reason="needs Debian's common-licenses")
def test_eval_sources_mirrors_hold_the_pinned_bytes() -> None:
    for _, rel, pin in load_sources(REPO / "eval" / "sources.yaml").pins():
        (mirror,) = pin.mirrors
        assert mirror.startswith(str(DEBIAN_LICENSES) + "/"), rel
        data = Path(mirror).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (pin.size, pin.sha256), rel
