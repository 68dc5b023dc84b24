"""An offline `gh`: serves a repository's issues and pull requests from a JSON fixture and
records, one JSON line per call, everything it was asked to do.

    python gh_stub.py --fixtures repo.json --log calls.jsonl issue view 3 --json title,body

It answers `issue list`, `issue view`, `pr view`, `pr diff`, `issue edit --add-label` and
`pr review` (--approve / --request-changes / --comment, --body); anything else exits 1 saying
it is not served offline, and is logged too. Writes go only to the log (opened for append):
the labels an issue has are its fixture's plus every `--add-label` logged before, so a grader
reads what the agent did from the log alone. `install` writes an executable `gh` into a
folder to put first on PATH. Standard library only: it runs under any interpreter, in a
sandbox or not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ISSUE_FIELDS = ("number", "title", "body", "state", "labels", "author", "createdAt", "comments")
PR_FIELDS = ("number", "title", "body", "state", "author", "headRefName", "baseRefName", "files")
REVIEW_KINDS = ("approve", "request-changes", "comment")
SERVED = ("issue list", "issue view", "issue edit", "pr view", "pr diff", "pr review")


class Refused(Exception):
    """A call the stub does not serve, or a bad argument: exit 1 with the message."""


def install(bin_dir: Path, fixtures: Path, log: Path, python: str = sys.executable) -> Path:
    """An executable `gh` in `bin_dir` running this stub on `fixtures`, logging to `log`."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    target = bin_dir / "gh"
    quoted = [_sh(python), _sh(str(Path(__file__).resolve())), "--fixtures", _sh(str(fixtures)),
              "--log", _sh(str(log))]  # fmt: skip
    target.write_text(f'#!/bin/sh\nexec {" ".join(quoted)} "$@"\n', encoding="utf-8")
    target.chmod(0o755)
    return target


def _sh(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def logged(log: Path) -> list[dict[str, Any]]:
    """Every call recorded so far, oldest first."""
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


def labels_of(fixture: dict[str, Any], log: Path, number: int) -> list[str]:
    """The labels issue `number` has: its fixture's plus every `--add-label` in `log`."""
    return labels_from(fixture, logged(log), number)


def labels_from(fixture: dict[str, Any], calls: list[dict[str, Any]], number: int) -> list[str]:
    """The labels issue `number` has after `calls` (records as `call` logs them)."""
    issue = _find(fixture.get("issues") or [], number, "issue")
    labels = list(issue.get("labels") or [])
    for call in calls:
        if call.get("command") == "issue edit" and call.get("number") == number and call["ok"]:
            labels += [x for x in call.get("added_labels") or [] if x not in labels]
    return labels


def _find(items: list[dict[str, Any]], number: int, kind: str) -> dict[str, Any]:
    for item in items:
        if item.get("number") == number:
            return item
    raise Refused(f"could not resolve to a {'PullRequest' if kind == 'pr' else 'Issue'} "
                  f"with the number of {number}")  # fmt: skip


def _number(text: str) -> int:
    try:
        return int(text.lstrip("#"))
    except ValueError:
        raise Refused(f"invalid issue format: {text!r}") from None


def _shown(item: dict[str, Any], fields: str | None, allowed: tuple[str, ...]) -> str:
    wanted = [f for f in (fields or "").split(",") if f]
    unknown = [f for f in wanted if f not in allowed]
    if unknown:
        raise Refused(f"Unknown JSON field: {unknown[0]!r}; available: {', '.join(allowed)}")
    picked = {f: _field(item, f) for f in wanted}
    return json.dumps(picked, indent=2)


def _field(item: dict[str, Any], name: str) -> Any:
    value = item.get(name)
    if name == "labels":
        return [{"name": label} for label in value or []]
    if name == "author":
        return {"login": value or "ghost"}
    if name == "comments":
        return [{"author": {"login": c.get("author", "ghost")}, "body": c.get("body", ""),
                 "createdAt": c.get("createdAt")} for c in value or []]  # fmt: skip
    return value


def _text(item: dict[str, Any], comments: bool) -> str:
    labels = ", ".join(item.get("labels") or [])
    lines = [f"title:\t{item.get('title', '')}", f"state:\t{item.get('state', 'OPEN')}",
             f"author:\t{item.get('author', 'ghost')}", f"labels:\t{labels}",
             f"number:\t{item['number']}", "--", item.get("body") or ""]  # fmt: skip
    if comments:
        for c in item.get("comments") or []:
            lines += ["--", f"author:\t{c.get('author', 'ghost')}", c.get("body", "")]
    return "\n".join(lines)


def serve(fixture: dict[str, Any], log: Path, args: list[str]) -> tuple[str, dict[str, Any]]:
    """(output, what to log) for one call; Refused for anything not served."""
    parser = argparse.ArgumentParser(prog="gh", add_help=False, exit_on_error=False)
    parser.add_argument("group")
    parser.add_argument("action")
    parser.add_argument("target", nargs="?")
    parser.add_argument("--json")
    parser.add_argument("--comments", action="store_true")
    parser.add_argument("--state", default="open")
    parser.add_argument("--label", action="append", default=[])
    parser.add_argument("--limit", "-L", type=int, default=30)
    parser.add_argument("--add-label", action="append", default=[])
    parser.add_argument("--repo", "-R")
    parser.add_argument("--body", "-b")
    for kind in REVIEW_KINDS:
        parser.add_argument(f"--{kind}", action="store_true")
    try:
        ns, extra = parser.parse_known_args(args)
    except (argparse.ArgumentError, SystemExit) as exc:
        raise Refused(f"bad arguments: {' '.join(args)} ({exc})") from None
    if extra:
        raise Refused(f"not served offline: {' '.join(extra)}")
    command = f"{ns.group} {ns.action}"
    record: dict[str, Any] = {"command": command, "repo": ns.repo}
    if command not in SERVED:
        raise Refused(f"gh {command} is not served offline")
    if command == "issue list":
        return _issue_list(fixture, log, ns), record
    if ns.target is None:
        raise Refused(f"{command}: give an issue or pull request number")
    number = record["number"] = _number(ns.target)
    issues, pulls = fixture.get("issues") or [], fixture.get("pulls") or []
    if command == "issue view":
        issue = dict(_find(issues, number, "issue"), labels=labels_of(fixture, log, number))
        return (
            _shown(issue, ns.json, ISSUE_FIELDS) if ns.json else _text(issue, ns.comments)
        ), record
    if command == "pr view":
        pull = _find(pulls, number, "pr")
        return (_shown(pull, ns.json, PR_FIELDS) if ns.json else _text(pull, ns.comments)), record
    if command == "pr diff":
        return str(_find(pulls, number, "pr").get("diff") or ""), record
    if command == "issue edit":
        _find(issues, number, "issue")
        added = [x.strip() for value in ns.add_label for x in value.split(",") if x.strip()]
        if not added:
            raise Refused("issue edit: only --add-label is served offline")
        record["added_labels"] = added
        return f"https://github.com/{fixture.get('repo', 'owner/repo')}/issues/{number}", record
    if command == "pr review":
        _find(pulls, number, "pr")
        kinds = [k for k in REVIEW_KINDS if getattr(ns, k.replace("-", "_"))]
        if len(kinds) != 1:
            raise Refused("pr review: give exactly one of --approve, --request-changes, --comment")
        if kinds[0] != "approve" and not ns.body:
            raise Refused(f"pr review: --{kinds[0]} needs --body")
        record |= {"review": kinds[0], "body": ns.body or ""}
        return f"- Reviewed pull request #{number}", record
    raise Refused(f"gh {command} is not served offline")


def _issue_list(fixture: dict[str, Any], log: Path, ns: argparse.Namespace) -> str:
    found = []
    for issue in fixture.get("issues") or []:
        state = str(issue.get("state", "OPEN")).lower()
        labels = labels_of(fixture, log, issue["number"])
        if ns.state != "all" and state != ns.state:
            continue
        if any(label not in labels for label in ns.label):
            continue
        found.append(dict(issue, labels=labels))
    found = found[: ns.limit]
    if ns.json:
        return "[" + ",".join(_shown(i, ns.json, ISSUE_FIELDS) for i in found) + "]"
    return "\n".join(f"{i['number']}\t{i.get('state', 'OPEN')}\t{i['title']}\t"
                     f"{', '.join(i['labels'])}" for i in found)  # fmt: skip


def call(fixture: dict[str, Any], log: Path, args: list[str]) -> tuple[int, str, str]:
    """One `gh` call: served, appended to `log`; (exit status, stdout, stderr)."""
    at = datetime.now(UTC).isoformat(timespec="seconds")
    try:
        out, record = serve(fixture, log, args)
        ok, error = True, None
    except Refused as exc:
        out, record, ok, error = "", {"command": " ".join(args[:2])}, False, str(exc)
    entry = {"at": at, "argv": args, **record, "ok": ok, "error": error}
    # O_APPEND: calls are only ever added, never rewritten, even by concurrent calls.
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")
    if not ok:
        return 1, "", f"gh: {error}\n"
    return 0, f"{out}\n" if out else "", ""


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[0] != "--fixtures" or argv[2] != "--log":
        print("usage: gh_stub.py --fixtures FILE --log FILE <gh arguments>", file=sys.stderr)
        return 2
    fixtures, log, args = Path(argv[1]), Path(argv[3]), argv[4:]
    fixture = json.loads(fixtures.read_text(encoding="utf-8"))
    status, out, err = call(fixture, log, args)
    sys.stdout.write(out)
    sys.stderr.write(err)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
