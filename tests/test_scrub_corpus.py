"""The one scrubber on its labelled corpus (eval/scrub): the held split's figures hold a bar.

Rules were tuned on dev only. A change that lets a planted secret through, or scrubs a git
SHA, a UUID, a content hash, an inline image or a version, moves the held figures and fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenteval.llm.scrub import REDACTED, Scrubber, scrub_text
from agenteval.llm.scrub_corpus import main, measure

CORPUS = Path(__file__).resolve().parents[1] / "eval" / "scrub"
# The bar docs/sessions.md states; measured 322/322 recall and 0/146 false scrubs on held
# (166/171 and 1/86 the first time its second wave was read, 206/208 and 1/99 its third,
# 50/52 and 3/22 the sixth wave's unseen batch: eval/scrub/README.md).
MIN_HELD_RECALL = 0.97
MAX_HELD_FALSE_SCRUB_RATE = 0.03


def _records(split: str) -> list[dict]:
    return [json.loads(line) for line in (CORPUS / f"{split}.jsonl").read_text().splitlines()]


def test_the_corpus_is_large_and_varied_enough() -> None:
    rows = _records("dev") + _records("held")
    secrets = [v for r in rows if "secrets" in r for v in r["secrets"]]
    assert len(secrets) >= 200 and len({r["kind"] for r in rows if "secrets" in r}) >= 25
    assert sum(bool(r.get("keep")) for r in rows) >= 100
    kinds = {r["kind"] for r in rows if r.get("keep")}
    assert {"git_sha", "uuid", "sha256_hash", "base64_image", "version_string"} <= kinds
    held_ids = {r["id"] for r in _records("held")}
    assert not held_ids & {r["id"] for r in _records("dev")}, "the splits share a record"


def test_held_recall_and_false_scrub_rate_meet_the_bar() -> None:
    score = measure(CORPUS / "held.jsonl")
    assert score.recall >= MIN_HELD_RECALL, score.missed
    assert score.false_scrub_rate <= MAX_HELD_FALSE_SCRUB_RATE, score.false_scrubs


def test_the_leaks_the_issue_found_are_scrubbed() -> None:
    planted = {
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY": "wJalrXUtnFEMI",
        "DJANGO_SECRET_KEY=django-insecure-8#k2!x@p0q": "8#k2!x@p0q",
        "STRIPE_SECRET_KEY=sk_live_51Hq2kLmN3oPqRsTu": "51Hq2kLmN3oPqRsTu",
        "DB_PASSWORD=Tr0ub4dor&3": "Tr0ub4dor",
        "SMTP_PASS=mailpass2024": "mailpass2024",
        "DD_API_KEY=0f1e2d3c4b5a69788796a5b4c3d2e1f0": "0f1e2d3c4b5a6978",
        "https://hooks.slack.com/services/T0AB12CD3/B0XY98ZW7/q1w2e3r4t5y6u7i8o9p0": "q1w2e3r4",
        "redis://:s3cr3tpw@cache:6379": "s3cr3tpw",
        "curl -u deploy:hunter22 https://x.org": "hunter22",
        "mysql -u root -pS3cretPW shop": "S3cretPW",
        "GET /items?token=abcDEF123456ghi": "abcDEF123456ghi",
        "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8": "npm_a1B2",
        "blob?sv=2022&sig=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5%3D": "Zm9vYmFy",
        "call (415) 823-0132 or +44 20 7946 0958": "823-0132",
        "ssn 219-09-9999 card 4539 1488 0343 6467": "219-09-9999",
        "PGPASSWORD=pgSecret99 psql": "pgSecret99",
        # by their carrier, any shape: a lower-case session id, a setter, any webhook host
        "Cookie: lang=en; sessionid=utfjyrvudnbuuqne1ukw5ariakzvolle": "utfjyrvudnbu",
        "setx SENTRY_AUTH_TOKEN uJWFsStydSjSUUqq49gAF7": "uJWFsStyd",
        "https://x.webhook.office.com/webhookb2/IncomingWebhook/d0b3dc21357789c5505fb": "d0b3dc2",
        # hidden in what is set aside as public: a block that says CRL, a JWK
        "-----BEGIN X509 CRL-----\nMIIBzTCBtgIBATANBgkqhkiG9w0B\npassword=Hunter2Secret99\n"
        "-----END X509 CRL-----": "Hunter2Secret99",
        '{"kty": "RSA", "n": "abc", "password": "Hunter2Secret99"}': "Hunter2Secret99",
    }
    for text, fragment in planted.items():
        out, counts = scrub_text(text)
        assert fragment not in out, text
        assert REDACTED in out and sum(counts.values()) >= 1
    assert "6467" not in scrub_text("card 4539 1488 0343 6467")[0]


def test_counts_name_kinds_never_values() -> None:
    out, counts = scrub_text("DB_PASSWORD=Tr0ub4dor&3 and ghp_0123456789abcdefghijABCDEFGHIJ012345")
    assert out.count(REDACTED) == 2
    assert all("Tr0ub4dor" not in k and "ghp_" not in k for k in counts)


def test_personal_numbers_only_where_asked() -> None:
    """An evaluation's transcripts quote corpus numbers that are answers: kept there."""
    text = "The support line is (415) 823-0132."
    assert Scrubber().scrub_text(text) == text
    assert "823-0132" not in Scrubber(personal=True).scrub_text(text)


def test_the_command_line_helps_and_refuses_bad_files_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as helped:
        main(["--help"])  # was read as a corpus file: a traceback
    assert helped.value.code == 0 and "--private" in capsys.readouterr().out
    assert main([str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl: no such corpus file" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "sha 3f9a2c1", "keep": true}\nnot json\n', encoding="utf-8")
    assert main([str(bad)]) == 2
    assert f"{bad}:2: not a corpus record" in capsys.readouterr().err
