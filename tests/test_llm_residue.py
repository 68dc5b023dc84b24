"""The residue gate (`llm.residue`): what still LOOKS private after scrubbing costs its unit
(a dataset's case, a reply the cache would store), and look-alikes pass it.

Values here are the project's own, written for this file (none is a red team's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenteval.llm import Completion, ResponseCache
from agenteval.llm.residue import residue, residue_spans, strings_of

LOOKS_PRIVATE = [
    # long digit runs in any grouping
    ("call me on 0171 4839 2210", "long digit run"),
    ("the account is 12 3481 7790 at the branch", "long digit run"),
    # identifiers beside a document's name, several languages
    ("Reisepass Nr. C4KX92LPT ist abgelaufen", "identifier"),
    ("mi DNI es 48213097Q", "identifier"),
    ("numero di patente U1A2B3C4D5", "identifier"),
    ("運転免許証番号 はAB12345678です", "identifier"),
    # a credential's value beside its name, however it is worded
    ("Set-Cookie: sess=Q9xTz7LmW2pR4vKc8NbY3dHf", "credential"),
    ("the session key Zx81QwPl0aMn72Ks expired", "credential"),
    # a birth date
    ("born 1987-02-14 in Porto", "birth date"),
    ("geboren am 02.11.1979", "birth date"),
    # e-mail in obfuscations
    ("write to marta dot kowalska at protonmail dot ch", "e-mail"),
    ("jan.de.vries [at] ziggo [dot] nl", "e-mail"),
    ("mailto:ana%40correo.es", "e-mail"),
    # street addresses of several countries
    ("Lindenallee 42, 50667 Köln", "street address"),
    ("14 rue des Lilas, 69003 Lyon", "street address"),
    ("ship it to 742 Evergreen Terrace", "street address"),
    # a seed phrase, a quoted pass phrase, a Japanese era birth date, house-level coordinates
    (
        "wallet mnemonic: crane olive tiger mango river plate hollow jazz quiet ember stone fig",
        "pass phrase",
    ),
    ("unlock it with passphrase 'purple lamp seven rivers'", "pass phrase"),
    ("生年月日：昭和52年8月9日", "birth date"),
    ("the GPS fix at home was 48.137154, 11.576124", "coordinates"),
    # half a pair the scrubber took, the other half left; a tuple is no call's argument
    ("home location = (47.376887, 8.[REDACTED]) within 50 m", "coordinates"),
    ("home location = (47.376887, 8.541694) within 50 m", "coordinates"),
    # a document number of a letter and digits is no capitals hex digest
    ("Alien Registration Number: B318847026 on the card", "identifier"),
    ("Anschrift: Am Kirchberg 12, Ortsteil Nord", "street address"),
    ("kontakt: j.kowalczyk＠wp.pl", "e-mail"),
    ("scrivi a l.bianchi chiocciola tiscali punto it", "e-mail"),
    ("Sozialversicherungsnummer 53 270461 K 048", "number beside its document"),
    ("口座番号 3920471 (普通)", "number beside its document"),
    ("Flat 4, 19 Westgate, Bristol", "street address"),
    ("ul. Długa 17/3, 80-827 Gdańsk", "street address"),
    # a random token no prefix announces, also base64-wrapped in prose
    ("here: Hq7ZpL2xWv9RkT4mNc8BsYd3Fg6J", "random-looking token"),
]

LOOK_ALIKES = [
    "commit 3f2a9c1d4e5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f",
    "uuid 123e4567-e89b-42d3-a456-426614174000",
    "released 2026-12-07T10:00:00Z version 3.12.1",
    "took 12345678 ms over 4096 tokens",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "see https://example.com/docs and user@example.com",
    "the class HTTPBasicAuth wraps aiohttp.BasicAuth",
    "export API_KEY=${API_KEY}",
    '"created_at": 1765101600123',
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@host",
    "PR #4821 fixed line 1234567",
    "Ubuntu 22.04 with python3.12 and node-v20.11.1",
    "the password was [REDACTED] and the token [REDACTED]",
    "coordinates 40.7128, -74.0060 (New York)",
    "Via Docker Compose 2 we run 3 services",
    "IBAN format: DE00 0000 0000 0000 0000 00",
    "random seed 1337 for reproducibility",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
]


@pytest.mark.parametrize(("text", "kind"), LOOKS_PRIVATE)
def test_what_still_looks_private_is_named_by_its_kind(text: str, kind: str) -> None:
    kinds = residue(text)
    assert any(kind in found for found in kinds), (text, residue_spans(text))


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_pass_the_gate(text: str) -> None:
    assert residue(text) == [], residue_spans(text)


def test_a_base64_run_is_read_as_the_text_it_decodes_to() -> None:
    import base64

    hidden = base64.b64encode(b"Reisepass Nr. C4KX92LPT, geboren am 02.11.1979").decode()
    assert residue(f"the header was {hidden}")
    prose = base64.b64encode(b"just a sentence about the weather and trains").decode()
    assert residue(f"the header was {prose}") == []


def test_strings_of_reads_keys_and_nested_values() -> None:
    value = {"a": ["x", {"k": "y"}], "b": ("z",)}
    assert sorted(strings_of(value)) == ["a", "b", "k", "x", "y", "z"]


def test_a_reply_that_still_looks_private_is_not_cached(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    # A bare long number: no rule can say whose it is, so the gate keeps it out.
    risky = Completion(text="Ring 4417 2291 8830 tonight", model="m")
    # An id beside its document's name: redacted, value and all, then stored.
    named = Completion(text="Her passport number is P7QX83KD2, renew it", model="m")
    assert cache.put("ab" + "1" * 62, risky) is False
    assert cache.put("ab" + "2" * 62, named) is True
    assert cache.withheld == 1
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert [p.name for p in files] == ["ab" + "2" * 62 + ".json"]
    assert "P7QX83KD2" not in files[0].read_text() and "renew it" in files[0].read_text()
    assert cache.get("ab" + "1" * 62) is None  # asked again next time, never served


def test_what_looks_private_with_a_known_extent_is_redacted_across_the_unit() -> None:
    from agenteval.llm.private import PrivateScrubber

    case = {
        "request": "Kundin: geboren am 14.06.1983, Reisepass C7RT42XQ9; mail an "
        "greta.vogelsang at web dot de oder Tel. 0176 5520 1934",
        "answer": "Noted C7RT42XQ9 and 14.06.1983; greta.vogelsang is on the list.",
    }
    clean = PrivateScrubber(env={}).scrub(case)
    text = str(clean)
    for value in ("14.06.1983", "C7RT42XQ9", "greta.vogelsang", "5520 1934"):
        assert value not in text, (value, clean)
    assert "Kundin" in text and "is on the list" in text


def test_an_address_wrapped_over_lines_in_a_reply_leaves_no_piece() -> None:
    from agenteval.llm.private import PrivateScrubber

    reply = {
        "text": "To tomasz.wieczorek77@interia.pl.\nwrapped:\nTo tomasz.wieczo\nrek77@interia.pl."
    }
    text = PrivateScrubber(env={}).scrub(reply)["text"]
    assert "tomasz" not in text and "wieczo" not in text, text


def test_a_key_wrapped_over_lines_after_its_name_goes_whole() -> None:
    from agenteval.llm.scrub import scrub_text

    text = (
        "  SERVICE_TOKEN=Hs82kLq0Zp3Xv7NcB1mQ9rTy4Wd6\n"
        "  Fj2Kp8Lx0Qs4Vn7Bc3Zm9Ht5Rw1Yd6Ge\n"
        "  Ua8Pe3Ki0\nrequirements_dev_2024\n"
    )
    clean = scrub_text(text).text
    assert "Fj2Kp8Lx0Qs4" not in clean and "Hs82kLq0Zp3X" not in clean, clean
    assert "requirements_dev_2024" in clean  # a plain word on the next line stays
