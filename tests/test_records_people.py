"""Secrets a sibling field names (API tool exports), personal columns of tables with a header
row, and names a label or a title announces (`llm.records`, `llm.people`), through the
scrubber sessions and the response cache use. Values are the project's own, written here."""

from __future__ import annotations

import pytest

from agenteval.llm.private import PrivateScrubber
from agenteval.llm.records import private_columns
from agenteval.llm.residue import residue

KEY = "7c1e9a4f2b8d6035e1f7a9c3b5d2e8f4"


@pytest.fixture
def scrubber() -> PrivateScrubber:
    return PrivateScrubber(env={})


SIBLING = [
    # Postman: a header and a collection variable (the name in "key", the value beside it)
    f'{{"key": "X-Typesense-Api-Key", "value": "{KEY}", "type": "text"}}',
    f'{{\n  "key": "searchAdminKey",\n  "value": "{KEY}"\n}}',
    f'{{"value": "{KEY}", "key": "meili_master_key", "enabled": true}}',
    # HAR / Insomnia: a header by name
    f'{{"name": "Authorization", "value": "Bearer {KEY}"}}',
    f'{{"name": "X-Auth-Token", "description": "", "value": "{KEY}"}}',
    # a Kubernetes env entry and Maven's XML
    f"env:\n  - name: REDIS_PASSWORD\n    value: {KEY}\n",
    f"<name>repoToken</name>\n<value>{KEY}</value>",
]


@pytest.mark.parametrize("text", SIBLING)
def test_a_value_whose_sibling_field_names_a_secret_is_redacted(
    scrubber: PrivateScrubber, text: str
) -> None:
    clean = scrubber.scrub(text)
    assert KEY not in clean and "[REDACTED]" in clean


@pytest.mark.parametrize(
    "text",
    [
        '{"key": "baseUrl", "value": "https://shop.example.com/api"}',
        '{"key": "X-Api-Key", "value": "{{typesenseKey}}"}',
        '{"name": "Content-Type", "value": "application/json"}',
        "  - name: LOG_LEVEL\n    value: debug\n",
    ],
)
def test_names_placeholders_and_other_fields_stay(scrubber: PrivateScrubber, text: str) -> None:
    assert scrubber.scrub(text) == text


def test_a_field_holding_a_secrets_name_is_kept_as_a_name(scrubber: PrivateScrubber) -> None:
    clean = scrubber.scrub(f'{{"key": "searchAdminKey", "value": "{KEY}"}}')
    assert '"searchAdminKey"' in clean and KEY not in clean


PEOPLE_CSV = (
    "ref,given_name,family_name,mobile,date_of_birth,plan\n"
    "A-17,Radka,Hlaváčková,+420 601 555 019,1969-10-02,gold\n"
    "A-18,Obinna,Eze-Nwosu,+234 803 555 0147,1991-03-27,basic\n"
)


def test_every_cell_of_a_personal_column_is_redacted_and_said_again_too(
    scrubber: PrivateScrubber,
) -> None:
    unit = {"request": PEOPLE_CSV, "answer": "Row A-18 (Obinna Eze-Nwosu) has a bad plan."}
    clean = scrubber.scrub(unit)
    text = repr(clean)
    for private in ("Radka", "Hlaváčková", "Eze-Nwosu", "1969-10-02", "601 555 019"):
        assert private not in text, private
    assert "A-17" in text and "gold" in text and "plan" in text


def test_tables_of_things_and_markdown_tables_of_people() -> None:
    packages = "name,version,license\nhttpx,0.27.0,BSD-3-Clause\n"
    assert private_columns(packages) == (packages, frozenset())
    ward = "| Patient | DOB | Bed |\n|---|---|---|\n| Ilse Brandtner | 1948-05-30 | 7 |\n"
    clean, values = private_columns(ward)
    assert "Ilse Brandtner" not in clean and "1948-05-30" not in clean and "| 7 |" in clean
    assert values == {"Ilse Brandtner", "1948-05-30"}


NAMED = [
    ("Paciente: Remedios Olaizola Urrutia, alergia a penicilina", "Olaizola Urrutia"),
    ("segundo paciente (Portugal): Joaquim Seixas Amaral", "Seixas Amaral"),
    ("Patientin Frau Hannelore Quast, Zimmer 12", "Hannelore Quast"),
    ("Employee: Dariusz Wróblewski was moved to payroll group C", "Wróblewski"),
    ("Mitarbeiter: Kai-Uwe Brennecke", "Brennecke"),
    ("Mme Solène Carpentier a rappelé", "Carpentier"),
    ("el Sr. Ibarrola y la Sra. Etxeberria firmaron", "Etxeberria"),
    ("Defendant: Pieter van Wijngaarden", "Wijngaarden"),
    ("Name: Chidinma Okonkwo-Bello", "Okonkwo-Bello"),
]


@pytest.mark.parametrize(("text", "surname"), NAMED)
def test_a_name_after_a_label_or_a_title_is_redacted(
    scrubber: PrivateScrubber, text: str, surname: str
) -> None:
    clean = scrubber.scrub({"note": text, "reply": f"I wrote to {surname} about it."})
    assert surname not in repr(clean), clean


@pytest.mark.parametrize(
    "text",
    [
        "- name: Checkout code\n  uses: actions/checkout@v4",
        "The Patient Portal returns 404 on /records",
        "Name: Build",
        "the client: a thin wrapper over httpx",
        "Sr. Software Engineer, Platform team",
    ],
)
def test_labels_of_code_and_prose_are_no_names(scrubber: PrivateScrubber, text: str) -> None:
    assert scrubber.scrub(text) == text and residue(text) == []


RECORDS = [
    (
        "BEGIN:VCARD\nVERSION:3.0\nFN:Wilhelmina Oyelaran-Brooks\nN:Oyelaran-Brooks;Wilhelmina;;;\n"
        "TEL;TYPE=cell:+44 7911 123987\nBDAY:1979-08-14\nEND:VCARD",
        ["Oyelaran-Brooks", "Wilhelmina", "1979-08-14"],
    ),
    (
        '{"resourceType": "Patient", "name": [{"family": "Szymanowska", "given": ["Bożena"]}],'
        ' "birthDate": "1958-12-03"}',
        ["Szymanowska", "Bożena"],
    ),
    (
        "PID|1||483920^^^HOSP^MR||Kettleborough^Ambrose^J||19620317|M|||12 Fenwick Lane",
        ["Kettleborough", "Ambrose"],
    ),
    ('[{"full_name": "Yusuf Demirtaş", "date_of_birth": "1990-02-28"}]', ["Demirtaş"]),
    ("dn: uid=mk,ou=people\ncn: Melike Karaca\nsn: Karaca\ngivenName: Melike", ["Karaca"]),
    ("From: Ottilie Hargreaves-Finch <o.hf@fastmail.co.uk>", ["Hargreaves-Finch"]),
    ("employees:\n  - name: Bartholomew Quaye\n    birthday: 1984-06-22", ["Quaye"]),
    (
        "P<GBRHARGREAVES<<OTTILIE<MAY<<<<<<<<<<<<<<<<\n5391827460GBR7902148F3011255<<<<<<<<<<<<<<02",
        ["HARGREAVES", "5391827460"],
    ),
    ("Anselm Griesbach,1977-09-30,Berlin", ["Griesbach"]),
    ("Patiënt: mevr. Annelies Brouwer", ["Brouwer"]),
]


@pytest.mark.parametrize(("text", "private"), RECORDS)
def test_a_person_in_a_record_of_any_format_is_redacted(
    scrubber: PrivateScrubber, text: str, private: list[str]
) -> None:
    clean = scrubber.scrub(text)
    assert not [value for value in private if value in clean], clean


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "agenteval", "version": "0.4.1", "private": true}',
        '{"displayName": "Settings", "icon": "gear"}',
        "Release Train,2026-11-30,done",
        "cn: build-agents\nobjectClass: groupOfNames",
    ],
)
def test_records_of_things_stay(scrubber: PrivateScrubber, text: str) -> None:
    assert scrubber.scrub(text) == text


def test_a_password_stated_in_a_sentence_goes_and_prose_about_it_stays(
    scrubber: PrivateScrubber,
) -> None:
    stated = scrubber.scrub("the guest wifi password is lantern-walrus-77, tell nobody")
    assert "lantern-walrus-77" not in stated
    for prose in (
        "the password is required for 2FA setups",
        "Passwort ist zu kurz (min. 12 Zeichen)",
        "password is $DB_PASS in CI",
    ):
        assert scrubber.scrub(prose) == prose and residue(prose) == []


@pytest.mark.parametrize(
    ("text", "private"),
    [
        ("Pacjent: Zbigniew Wróbel, oddział 3", "Wróbel"),
        ("Pt. name: Harriet Oduya-Mensah, bed 12", "Oduya-Mensah"),
        ("patient Eleanor Vance-Whitby was seen at 14:00", "Vance-Whitby"),
        (
            '{"patient": {"first": "Caetano", "last": "Figueiredo", "dob": "1966-04-18"}}',
            "Figueiredo",
        ),
        (
            "INSERT INTO users (name, email, birth_date) VALUES ('Radovan Kostelecký', "
            "'rk@seznam.cz', '1970-01-30');",
            "Kostelecký",
        ),
        ("- **Name:** Tobiasz Jankowski\n- **DOB:** 1985-03-02", "Jankowski"),
    ],
)
def test_names_in_notes_json_sql_and_markdown(
    scrubber: PrivateScrubber, text: str, private: str
) -> None:
    assert private not in scrubber.scrub(text)


def test_an_insert_of_things_stays(scrubber: PrivateScrubber) -> None:
    text = "INSERT INTO plans (name, price_cents) VALUES ('Gold Tier', 4900);"
    assert scrubber.scrub(text) == text
