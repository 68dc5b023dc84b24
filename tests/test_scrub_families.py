"""The scrubber's families, not values: each case is one member of a family a red team found
leaking (cards in any grouping, postal addresses, a name with a birth date, passwords in
prose, home folders in any case, URL-encoded and JSON-escaped text, a held key re-wrapped),
beside the look-alikes that must come out byte for byte. Pure functions: no files, no
servers (the cache's end-to-end check is tests/test_llm_cache_secrets.py)."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from agenteval.llm.private import PrivateScrubber
from agenteval.llm.scrub import REDACTED, Scrubber
from agenteval.llm.views import PIECE, HeldSecrets, decoded_views

PERSONAL = Scrubber(personal=True)

LEAKS = {
    # cards: Luhn-valid in any grouping, or named a card whatever its check digit (none a
    # provider's published test card: those are public, llm.public_ids.TEST_CARDS)
    "card spaces": ("Charge 4539 1488 0343 6467 today", "4539 1488 0343 6467"),
    "card dots": ("number 5281.4730.9261.5531 on file", "5281.4730.9261.5531"),
    "card dashes amex": ("amex 3714-602815-39061 ok", "3714-602815-39061"),
    "card named, bad check digit": ("Visa card 4539 4794 7153 5547, exp 09/28", "7153 5547"),
    "card before cvv": ("use 5425 2334 3010 9904 cvv 123", "5425 2334 3010 9904"),
    # postal addresses in several countries' orders
    "address US": ("Ship to 1600 Pennsylvania Avenue NW, Washington, DC 20500.", "1600 Penn"),
    "address US unit": ("lives at 77 Elm St, Apt 4, Boston, MA 02118", "77 Elm St"),
    "address UK": ("Office: 221B Baker Street, London NW1 6XE", "221B Baker Street"),
    "address DE": ("Adresse: Hauptstraße 5, 80331 München", "Hauptstraße 5"),
    "address DE two words": ("Rechnung an Berliner Allee 12, 40212 Düsseldorf", "Allee 12"),
    "address NL": ("bezorgen op Keizersgracht 123, 1015 CJ Amsterdam", "Keizersgracht 123"),
    "address FR": ("envoyer au 12 rue de la Paix, 75002 Paris", "rue de la Paix"),
    "address ES": ("Dirección: Calle de Alcalá 42, 28014 Madrid", "Alcalá 42"),
    "address IT": ("spedire a Via Roma 12, 00184 Roma", "Via Roma 12"),
    "address PO box": ("Mail to PO Box 4471, Austin", "Box 4471"),
    "address Postfach": ("Postfach 10 11 12 in Köln", "10 11 12"),
    # a name with a birth date
    "birth EN": ("Beneficiary: Maria Gonzalez, born 1990-07-21", "1990-07-21"),
    "birth DE": ("Kunde Hans Meier, geb. 03.04.1975, Kontakt", "03.04.1975"),
    "birth FR": ("Claire Dubois, née le 3 mars 1990, cliente", "3 mars 1990"),
    "birth DOB": ("Patient John Smith DOB: 04/12/1961", "04/12/1961"),
    "birth month name": ("Ana Costa (born March 14, 1987) signed", "March 14, 1987"),
    # passwords in prose, several phrasings and languages
    "said EN is": ("my password is Tr0ub4dor&3 for the VPN", "Tr0ub4dor&3"),
    "said EN to": ("set the client secret to Zx9vB2nM4qW8eR6t in prod", "Zx9vB2nM4qW8eR6t"),
    "said EN words between": ("the password for the admin panel is Adm1n!2024", "Adm1n!2024"),
    "said EN value first": ("Is `Wq8f4Dnk#z` still our staging password?", "Wq8f4Dnk#z"),
    "said EN value, verb": ("`Kx7#mQ2vLp` was the old root password", "Kx7#mQ2vLp"),
    "said DE": ("Das Passwort lautet Sommer2024! bitte", "Sommer2024"),
    "said FR": ("mon mot de passe est Soleil#42 merci", "Soleil#42"),
    "said ES": ("la contraseña es Perro_99x ahora", "Perro_99x"),
    "said PT": ("a senha é Gato#2023z", "Gato#2023z"),
    "said NL": ("het wachtwoord is Fiets42!a", "Fiets42!a"),
    # provider and header shapes
    "okta SSWS": ('"header": "SSWS 00Tq8bX-Lk2_vVbCdRyZ7QPBuUbyJKYH9Yw36mH"', "00Tq8bX-Lk2"),
    "env file, symbols": ("`APP_SECRET_KEY=dj-in%6&*oq(=h8!25az9*@z87bx` ok", "dj-in%6&*oq"),
}


@pytest.mark.parametrize("name", sorted(LEAKS))
def test_a_family_member_is_scrubbed(name: str) -> None:
    text, value = LEAKS[name]
    assert value in text
    assert value not in PERSONAL.scrub_text(text), name


HOMES = [
    "c:\\users\\aigerim\\.kube\\config",
    "C:/USERS/aigerim/.kube/config",
    "/mnt/c/users/aigerim/x",
    "\\\\WSL$\\Ubuntu\\home\\aigerim\\x",
    "/var/home/aigerim/x",
    "/export/home/aigerim/x",
    "~aigerim/x",
]


@pytest.mark.parametrize("path", HOMES)
def test_home_folders_in_every_form_and_case(path: str) -> None:
    scrubber = PrivateScrubber(env={})
    out = scrubber.scrub_text(f"see {path} and ask aigerim")
    assert "aigerim" not in out


def test_a_project_folder_name_teaches_the_dashed_user_name() -> None:
    scrubber = PrivateScrubber(env={})
    scrubber.learn("cwd C:\\Users\\ngozi.okafor\\etl")
    assert "okafor" not in scrubber.scrub_text("C--Users-ngozi-okafor-etl and ngozi.okafor")
    alone = PrivateScrubber(env={})
    assert "mbeaumont" not in alone.scrub_text("-Users-mbeaumont-code-atlas ran as mbeaumont")


def test_decoded_views_find_what_a_url_or_json_string_hides() -> None:
    scrubber = PrivateScrubber(env={})
    assert "okonkwo" not in scrubber.scrub_text("CC: mailto:j.okonkwo%40outlook.com")
    out = scrubber.scrub_text("postgresql://app:Wq8f4DnkUNvr%23z@db/x, then Wq8f4DnkUNvr#z")
    assert "Wq8f4DnkUNvr" not in out
    escaped = json.dumps("my password is Tr0ub4dor&3\n")[1:-1].replace("&", "\\u0026")
    assert "Tr0ub4dor" not in PERSONAL.scrub_text(escaped)
    assert decoded_views("plain text") == []


KEY = "rt9Qm2XvL7pB4nK8sW3yH6cD1jF0aEgUoTz5"


def _wrapped(key: str) -> dict[str, str]:
    lines = "\n".join(key[i : i + 10] for i in range(0, len(key), 10))
    return {
        "lines": f"header: {lines}",
        "crlf": "header: " + "\r\n  ".join(key[i : i + 7] for i in range(0, len(key), 7)),
        "concatenated": " + ".join(f'"{key[i : i + 9]}"' for i in range(0, len(key), 9)),
        "json escaped": json.dumps(key[:15] + "\n" + key[15:])[1:-1],
        "url encoded lines": quote(key[:18] + "\n" + key[18:], safe=""),
        "a cut piece": f"...{key[5:19]}...",
        "quoted pieces": "'" + "' '".join(key[i : i + 6] for i in range(0, len(key), 6)) + "'",
    }


@pytest.mark.parametrize("form", sorted(_wrapped(KEY)))
def test_a_held_key_is_found_however_a_reply_rewraps_it(form: str) -> None:
    text = _wrapped(KEY)[form]
    out = Scrubber(secret_values={"env:K": KEY}).scrub_text(text)
    flat = "".join(c for c in out if c.isalnum())
    pieces = {KEY[i : i + PIECE] for i in range(len(KEY) - PIECE + 1)}
    assert REDACTED in out and not any(piece in flat for piece in pieces), (form, out)


def test_held_secrets_leave_other_text_alone() -> None:
    held = HeldSecrets([KEY])
    text = "rt9Q is a prefix, and " + KEY[:8] + " alone is short"
    assert held.spans(text) == []
    assert held.spans("x " + KEY + " y") == [(2, 2 + len(KEY))]


KEEP = [
    "deploy key `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIQu5HbeNiuWsRQIBhvJKZ2/I5mJOCEbG0nJMGp ci@x`",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEUt6dWFXPP8pjMSiK6Ce4/dcc8gzB"
    "j1xZGddVULi2iUN7ORipKBsf\n-----END PUBLIC KEY-----",
    "The fixture `aGVsbG8gZnJvbSB0aGUgaGVscGRlc2sgYnVpbGQgcGlwZWxpbmU=` decodes to text.",
    "Use `?access_token=$RATES_TOKEN` and `?token=${API_TOKEN}` in the docs.",
    "shapes only as `sk-xxxxxxxxxxxxxxxxxxxxxxxx` or `ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX`",
    "commit 4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 and uuid 123e4567-e89b-12d3-a456-426614174000",
    "GET /users/42/repos returned 200; see https://api.github.com/users/octocat",
    "String 5 and Spring 2024 via the API; Via Docker Compose 2 we run 3 Docker services",
    "the token expires in 3600 seconds; password reset link sent; the password field is empty",
    "version 1.2.3.4567.8901.2345 and epoch 1733567890123 and ISBN 978-3-16-148410-0",
    "write to jane.doe@example.com (a placeholder)",
    "Dr. Smith ran 3 Main tests; 10 Downing tests passed",
]


@pytest.mark.parametrize("text", KEEP)
def test_look_alikes_come_out_byte_for_byte(text: str) -> None:
    assert PrivateScrubber(env={}).scrub_text(text) == text


def test_a_found_secret_re_wrapped_elsewhere_in_the_unit_goes_everywhere() -> None:
    """An echo that repeats a request wrapped at 60 columns leaves a key's tail on a line of
    its own: the unit's second pass redacts any run of a value found once."""
    from agenteval.llm.scrub import replace_everywhere

    value = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9vTvnycHfn15lhufwMSi25"
    wrapped = f"aws_secret_access_key = {value[:20]}\n{value[20:]}\nregion = eu-central-1"
    clean = replace_everywhere({"first": f"key {value}", "echo": wrapped}, [value])
    assert value[20:32] not in str(clean) and "region = eu-central-1" in clean["echo"]
