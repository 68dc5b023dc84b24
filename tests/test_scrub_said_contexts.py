"""Secrets a context names rather than a shape (issue 43, red team rt43g's families): a Wi-Fi
PSK, a password in HTML character references, a secret a sentence says is hex-encoded, a
password of letters in a Polish sentence, a login's user / password, a key handed to the
call that takes it, a passport's machine-readable zone, a file named for a person and a birth
date. Each beside look-alikes of the same form that must come out byte for byte. Values are
made up for these tests. Pure functions: no files, no servers."""

from __future__ import annotations

import pytest

from agenteval.llm.private import PrivateScrubber
from agenteval.llm.scrub import REDACTED, Scrubber

PERSONAL = Scrubber(personal=True)


def _entities(value: str, hex_every: int = 0) -> str:
    return "".join(
        f"&#x{ord(c):X};" if hex_every and i % hex_every == 0 else f"&#{ord(c)};"
        for i, c in enumerate(value)
    )


LEAKS = {
    "wpa_supplicant psk": ('network={\n  ssid="Lab"\n  psk="Qe7rTylmB2xw"\n}', "Qe7rTylmB2xw"),
    "hostapd psk name": ("wpa_psk: Rq0nVbE4sLmZ", "Rq0nVbE4sLmZ"),
    "input value, decimal refs": (
        f'<input type="password" value="{_entities("Kp9vLw2qRx")}">',
        _entities("Kp9vLw2qRx"),
    ),
    "input value, mixed refs": (
        f'<input name="pwd" type="password" class="f" value="K{_entities("p9vL", 2)}w2qRx">',
        "w2qRx",
    ),
    "sentence with a parenthesis": (
        "the signing secret, base16-encoded, is 6d795f7369676e696e675f736563726574",
        "6d795f7369676e696e675f736563726574",
    ),
    "Polish, letters only": ("hasło do routera to SosnowyGrxWqt", "SosnowyGrxWqt"),
    "German, letters only": ("das Passwort für den Server ist BirkeQzrTpl", "BirkeQzrTpl"),
    "login user / password": ("login for the test VM: deploy / Mv3!kqPzr", "Mv3!kqPzr"),
    "credentials user / password": ("credentials: ops / Hx7wq#Lr2", "Hx7wq#Lr2"),
    "eth key positional": (
        "signer = Account.from_key('0x"
        + "4c0883a69102937d6231471b5dbb6204fe512961708279f2e3e8a5d4b8e3e6a1')",
        "4c0883a69102937d6231471b5dbb6204fe512961708279f2e3e8a5d4b8e3e6a1",
    ),
    "ethers wallet": (
        'const w = new ethers.Wallet("0x' + "9f1c" * 16 + '")',
        "9f1c" * 16,
    ),
    "ed25519 from bytes.fromhex": (
        "sk = SigningKey.from_string(bytes.fromhex('" + "a3b1" * 16 + "'))",
        "a3b1" * 16,
    ),
}

KEPT = [
    '<input type="password" name="pwd" placeholder="Password">',
    "Tom &amp; Jerry &#169; 2024 &#8212; all rights reserved",
    "the password is PasswordField, a Django form class",
    "the token is AccessToken in the SDK",
    "login for staging: see the wiki / ask the on-call",
    "sha = hashlib.sha256(data).hexdigest()  # "
    + "4c0883a69102937d6231471b5dbb6204fe512961708279f2e3e8a5d4b8e3e6a1",
    "verify_checksum('" + "ab12" * 16 + "')",
    "key = load_key('prod-signing-key')",
    "bal = wallet.get_balance('0x52908400098527886E0F7030069857D2E4169EE7')",  # an address
    "account: billing / invoices",
    "the secret, as the docs say, is required",
]


@pytest.mark.parametrize("name", sorted(LEAKS))
def test_a_secret_its_context_names_is_redacted(name: str) -> None:
    text, value = LEAKS[name]
    clean = PERSONAL.scrub_text(text)
    assert value not in clean, clean
    assert REDACTED in clean


@pytest.mark.parametrize("text", KEPT)
def test_look_alikes_of_those_contexts_survive(text: str) -> None:
    assert PERSONAL.scrub_text(text) == text


def test_the_html_view_redacts_every_encoding_of_the_value() -> None:
    """The value found in the decoded markup is gone in whatever references wrote it."""
    password = "Zt4mQw8yLp"
    for encoded in (_entities(password), _entities(password, 1), _entities(password, 3)):
        clean = PERSONAL.scrub_text(f'<input type="password" value="{encoded}">')
        assert clean == f'<input type="password" value="{REDACTED}">', clean


PEOPLE = {
    "passport MRZ copied with a spare filler": (
        "P<DEUMUSTERFRAU<<ERIKA<<<<<<<<<<<<<<<<<<<<<<<\n"
        "C01X00T478<D<<6408125F2702283<<<<<<<<<<<<<<<4",
        ["MUSTERFRAU", "C01X00T47"],
    ),
    "patient file, capitalised name": (
        "open /srv/records/Maria_Nowak_1958-11-30_scan.pdf",
        ["Maria_Nowak_1958"],
    ),
    "client folder, lower-case name": (
        "cd /home/app/customers/lena-berg-1991-02-14/invoices",
        ["lena-berg-1991"],
    ),
    "the same folder as a project name": ("-srv-members-ola-lind-1975-06-01-site", ["ola-lind"]),
}


@pytest.mark.parametrize("name", sorted(PEOPLE))
def test_a_person_named_with_a_birth_date_in_a_path_or_mrz_is_redacted(name: str) -> None:
    text, needles = PEOPLE[name]
    clean = PrivateScrubber([], env={}).scrub_text(text)
    for needle in needles:
        assert needle not in clean, clean


@pytest.mark.parametrize(
    "text",
    [
        "restore backup_db_2003-05-01.sql on the replica",
        "logs/nightly-build-1999-12-31.txt",
        "cd /srv/customers/api/v2",
    ],
)
def test_dated_files_without_a_name_survive(text: str) -> None:
    assert PrivateScrubber([], env={}).scrub_text(text) == text
