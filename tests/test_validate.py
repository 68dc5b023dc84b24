"""`agenteval validate`: every rule with a bad file, messages as path:line, exit 2, no traceback."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.suite.validate import validate

LINE = re.compile(r"^[^:\n]+:\d+: ")

GOOD = """\
id: revenue_lookup
category: rag_quality
persona: power_user
setup:
  index_documents:
    - corpus_doc: report
      path: eval/corpus/documents/report.md
turns:
  - turn: 1
    objective: Ask about revenue
    ground_truth:
      doc_id: report
      fact_id: revenue
      expected_answer: "$8.6 million"
    success_criteria: States $8.6 million
"""

MANIFEST = {
    "documents": [
        {"id": "report", "filename": "report.md", "format": "markdown",
         "facts": [{"id": "revenue", "question": "Revenue?", "answer": "$8.6 million"},
                   {"id": "ceo", "question": "CEO?", "answer": None}]}
    ],
    "adversarial_documents": [{"id": "empty_file", "filename": "empty.txt"}],
}  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "eval/corpus/documents").mkdir(parents=True)
    (tmp_path / "eval/corpus/adversarial").mkdir(parents=True)
    (tmp_path / "eval/scenarios").mkdir(parents=True)
    (tmp_path / "eval/corpus/documents/report.md").write_text("Revenue was $8.6 million.\n")
    (tmp_path / "eval/corpus/adversarial/empty.txt").write_text("")
    (tmp_path / "eval/corpus/manifest.json").write_text(json.dumps(MANIFEST, indent=2))
    return tmp_path


def write(repo: Path, name: str, text: str) -> Path:
    path = repo / "eval/scenarios" / name
    path.write_text(textwrap.dedent(text))
    return path


def messages(repo: Path) -> list[str]:
    return [str(p) for p in validate([], root=repo).problems]


def test_good_scenario_passes(repo: Path) -> None:
    write(repo, "good.yaml", GOOD)
    result = validate([], root=repo)
    assert result.ok and result.problems == [] and len(result.scenarios) == 1


def test_missing_required_field_names_field_and_line(repo: Path) -> None:
    write(repo, "bad.yaml", GOOD.replace("persona: power_user\n", ""))
    assert messages(repo) == ["eval/scenarios/bad.yaml:1: persona: Field required"]


def test_wrong_type_points_at_its_line(repo: Path) -> None:
    write(repo, "bad.yaml", GOOD.replace("  - turn: 1\n", "  - turn: first\n"))
    (msg,) = messages(repo)
    assert msg.startswith("eval/scenarios/bad.yaml:9: turns.0.turn:")


def test_id_must_be_snake_case(repo: Path) -> None:
    write(repo, "bad.yaml", GOOD.replace("id: revenue_lookup", "id: Revenue-Lookup"))
    assert messages(repo) == ["eval/scenarios/bad.yaml:1: id 'Revenue-Lookup' is not snake_case"]


def test_duplicate_id_names_both_files(repo: Path) -> None:
    write(repo, "a.yaml", GOOD)
    write(repo, "b.yaml", GOOD)
    (msg,) = messages(repo)
    assert msg.startswith("eval/scenarios/b.yaml:1: duplicate id 'revenue_lookup'")
    assert "eval/scenarios/a.yaml:1" in msg


def test_turns_numbered_in_order(repo: Path) -> None:
    write(repo, "bad.yaml", GOOD.replace("  - turn: 1\n", "  - turn: 2\n"))
    (msg,) = messages(repo)
    assert msg.startswith("eval/scenarios/bad.yaml:9: turn numbers must run 1..N")


def test_turn_needs_ground_truth_or_criteria(repo: Path) -> None:
    text = GOOD.split("    ground_truth:")[0]
    write(repo, "bad.yaml", text)
    assert messages(repo) == [
        "eval/scenarios/bad.yaml:9: turn 1 needs a ground_truth or a non-empty success_criteria"
    ]


@pytest.mark.parametrize(
    ("old", "new", "fragment", "line"),
    [
        ("doc_id: report", "doc_id: nope", "doc_id 'nope' not in manifest", 12),
        ("fact_id: revenue", "fact_id: nope", "fact 'nope' not in document 'report'", 13),
        ("corpus_doc: report", "corpus_doc: nope", "corpus_doc 'nope' not in manifest", 6),
        (
            "fact_id: revenue",
            "fact_ids: [revenue, gone]",
            "fact 'gone' not in document 'report'",
            13,
        ),
    ],
)
def test_references_resolve_in_manifest(
    repo: Path, old: str, new: str, fragment: str, line: int
) -> None:
    write(repo, "bad.yaml", GOOD.replace(old, new))
    (msg,) = messages(repo)
    assert msg.startswith(f"eval/scenarios/bad.yaml:{line}: ") and fragment in msg


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("eval/corpus/documents/missing.md", "does not exist"),
        ("/etc/passwd", "is absolute"),
        ("../outside.md", "escapes the repository root"),
        ("eval/../../outside.md", "escapes the repository root"),
    ],
)
def test_index_paths_exist_inside_repo(repo: Path, path: str, fragment: str) -> None:
    (repo.parent / "outside.md").write_text("x")
    write(repo, "bad.yaml", GOOD.replace("path: eval/corpus/documents/report.md", f"path: {path}"))
    (msg,) = messages(repo)
    assert msg.startswith("eval/scenarios/bad.yaml:7: ") and fragment in msg


def test_unknown_keys_are_warnings_naming_key_and_file(repo: Path) -> None:
    write(repo, "w.yaml", GOOD + "colour: blue\n").write_text(
        GOOD.replace("    objective:", "    mood: calm\n    objective:") + "colour: blue\n"
    )
    result = validate([], root=repo)
    assert result.ok
    texts = [str(p) for p in result.problems]
    assert any("warning: unknown key 'colour'" in t and "w.yaml" in t for t in texts)
    assert any(t.startswith("eval/scenarios/w.yaml:10: warning: unknown key 'mood'") for t in texts)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "empty file"),
        (b"   \n\n", "empty file"),
        (b"id: [unclosed\n", "invalid YAML"),
        (b"\x00\x01\x02binary", "binary file"),
        (b"\xff\xfe\xfa garbage", "not valid UTF-8"),
        (b"- just\n- a list\n", "must be a mapping"),
        (b"just a string", "must be a mapping"),
        (b"key: value\n  bad indent: x\n", "invalid YAML"),
    ],
)
def test_malformed_files_give_path_line_messages(repo: Path, content: bytes, fragment: str) -> None:
    (repo / "eval/scenarios/bad.yaml").write_bytes(content)
    (msg,) = messages(repo)
    assert LINE.match(msg) and fragment in msg and msg.startswith("eval/scenarios/bad.yaml:")


def test_manifest_problems(repo: Path) -> None:
    bad = dict(MANIFEST)
    bad["documents"] = [
        *MANIFEST["documents"],
        {"id": "report", "filename": "gone.md", "sha256": "XYZ"},
    ]  # type: ignore[list-item]
    (repo / "eval/corpus/manifest.json").write_text(json.dumps(bad, indent=2))
    texts = messages(repo)
    assert any("duplicate document id 'report'" in t for t in texts)
    assert any("gone.md" in t and "does not exist" in t for t in texts)
    assert any("sha256 must be 64 lowercase hex" in t for t in texts)
    assert all(t.startswith("eval/corpus/manifest.json:") for t in texts)


def test_reference_style_scenario_loads_unmodified(repo: Path) -> None:
    write(
        repo,
        "captured.yaml",
        """\
        id: captured_session_replay
        name: "Captured"
        category: captured
        severity: standard
        agent_type: chat
        captured_from: 29c211c7-31b5-4084-bb3f-1825c0210942
        note: replayed from a real session
        description: |
          A golden path.
        persona: casual_user
        setup:
          memory_clear: true
          index_documents: []
        turns:
          - turn: 1
            objective: "Ask 'what documents do you have?'"
            expected_tools: [list_documents]
            ground_truth:
              expected_behavior: Lists documents
              expected_phrases: ["report"]
            success_criteria: Lists the documents
          - turn: 2
            objective: Ask for the CEO
            ground_truth:
              doc_id: report
              fact_id: ceo
              expected_answer: null
              note: NOT in document
            success_criteria: Admits it does not know
        expected_outcome: |
          Works.
        """,
    )
    result = validate([], root=repo)
    assert result.ok and result.problems == []
    gt = result.scenarios[0].scenario.turns[1].ground_truth
    assert gt is not None and gt.answer_unknown and gt.expected_answer is None


def test_cli_exit_codes(repo: Path) -> None:
    write(repo, "good.yaml", GOOD)
    runner = CliRunner()
    ok = runner.invoke(app, ["validate", "--root", str(repo)])
    assert ok.exit_code == 0, ok.output
    (repo / "eval/scenarios/bad.yaml").write_bytes(b"id: [")
    bad = runner.invoke(app, ["validate", "--root", str(repo)])
    assert bad.exit_code == 2 and "eval/scenarios/bad.yaml:" in bad.output
    assert "Traceback" not in bad.output


def test_shipped_suite_is_valid() -> None:
    root = Path(__file__).resolve().parents[1]
    result = validate([], root=root)
    assert [str(p) for p in result.problems if p.severity == "error"] == []
    assert len(result.scenarios) >= 24


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
scenario_like = st.fixed_dictionaries(
    {},
    optional={
        "id": yaml_values, "category": yaml_values, "persona": yaml_values,
        "setup": st.fixed_dictionaries({}, optional={"index_documents": yaml_values}) | yaml_values,
        "turns": st.lists(st.dictionaries(st.sampled_from(
            ["turn", "objective", "ground_truth", "success_criteria", "expected_tools", "x"]),
            yaml_values, max_size=5), max_size=3) | yaml_values,
    },
)  # fmt: skip


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=300))
def test_random_bytes_never_traceback(repo: Path, data: bytes) -> None:
    (repo / "eval/scenarios/fuzz.yaml").write_bytes(data)
    for problem in validate([], root=repo).problems:
        assert LINE.match(str(problem))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(doc=scenario_like | yaml_values)
def test_random_yaml_never_traceback(repo: Path, doc: object) -> None:
    (repo / "eval/scenarios/fuzz.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True))
    for problem in validate([], root=repo).problems:
        assert LINE.match(str(problem))


def test_pinned_document_bytes_must_match(repo: Path) -> None:
    from agenteval.corpus.pins import pin_manifest

    write(repo, "good.yaml", GOOD)
    changes = pin_manifest(repo / "eval/corpus/manifest.json", repo)
    assert {c.doc_id for c in changes} == {"report", "empty_file"}
    assert validate([], root=repo).ok
    assert pin_manifest(repo / "eval/corpus/manifest.json", repo) == []  # idempotent
    (repo / "eval/corpus/documents/report.md").write_text("Revenue was $9.9 million.\n")
    (msg,) = messages(repo)
    assert msg.startswith("eval/corpus/manifest.json:") and "no longer matches its pin" in msg
    assert "agenteval corpus pin" in msg


def test_fetched_paths_may_be_absent_until_fetch(repo: Path) -> None:
    sha = "a" * 64
    (repo / "eval/sources.yaml").write_text(
        textwrap.dedent(f"""\
        sources:
          texts:
            title: T
            homepage: https://example.org/
            license: CC0
            files:
              a.txt: {{url: "https://example.org/a.txt", sha256: "{sha}", bytes: 10}}
        """)
    )
    write(
        repo,
        "ext.yaml",
        GOOD.replace("eval/corpus/documents/report.md", "data/corpora/texts/a.txt"),
    )
    assert validate([], root=repo).ok
    write(
        repo,
        "ext.yaml",
        GOOD.replace("eval/corpus/documents/report.md", "data/corpora/texts/b.txt"),
    )
    (msg,) = messages(repo)
    assert "does not exist" in msg
