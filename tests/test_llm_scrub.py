"""Scrubber: known secret values and secret-shaped strings become [REDACTED]."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agenteval.llm import REDACTED, Scrubber
from agenteval.llm.scrub import scrub_text

KNOWN = "Kx7-my-endpoint-credential-93"


def test_known_values_from_named_and_secret_looking_variables() -> None:
    env = {
        "MY_LLM_CRED": "custom-name-credential-1",  # only known because it is named
        "OPENAI_API_KEY": "plain-looking-value-2",
        "GITHUB_TOKEN": "another-plain-value-3",
        "DB_SECRET_PATH": "secret-looking-name-4",
        "HOME": "/home/someone-not-secret",
        "SHORT_TOKEN": "abc",  # too short to redact without mangling ordinary text
    }
    scrubber = Scrubber.from_environment(["MY_LLM_CRED"], env=env)
    text = " ".join(env.values())
    out = scrubber.scrub_text(text)
    for name in ("MY_LLM_CRED", "OPENAI_API_KEY", "GITHUB_TOKEN", "DB_SECRET_PATH"):
        assert env[name] not in out
    assert "/home/someone-not-secret" in out and " abc" in out
    assert sorted(scrubber.leaks(text)) == [
        "env:DB_SECRET_PATH",
        "env:GITHUB_TOKEN",
        "env:MY_LLM_CRED",
        "env:OPENAI_API_KEY",
    ]


def test_nested_structures_are_scrubbed_and_types_kept() -> None:
    scrubber = Scrubber(secret_values=[KNOWN])
    data = {
        "transcript": [{"role": "tool", "content": f"env shows KEY={KNOWN}"}],
        "pair": (KNOWN, 3),
        KNOWN: "as a key",
        "api_key": "anything-at-all",
        "api_key_env": "OPENAI_API_KEY",
        "usage": {"input_tokens": 12, "cost_usd": None, "cached": True},
    }
    out = scrubber.scrub(data)
    assert KNOWN not in json.dumps(out, default=str)
    assert out["pair"] == (REDACTED, 3)
    assert out[REDACTED] == "as a key"
    assert out["api_key"] == REDACTED
    assert out["api_key_env"] == "OPENAI_API_KEY"
    assert out["usage"] == {"input_tokens": 12, "cost_usd": None, "cached": True}
    assert data["pair"] == (KNOWN, 3), "the input must not be modified"


def _random_base62(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


SECRET_SHAPES = [
    "sk-ant-api03-Qw3rTy_uIoP-aSdFgHjKl9876",
    "sk-proj-AbCdEf0123456789ghijkLMNOP",
    "sk-0123456789abcdefABCDEF",
    "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "github_pat_11ABCDEFG0123456789_abcdefghij",
    "hf_abcdefghijklmnopqrstuvwxyzABCD",
    "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    "AKIAZ7QW3RT5YU2IOP4L",  # (AWS's documented AKIAIOSFODNN7EXAMPLE is BENIGN)
    "xoxb-1234567890-abcdefghijkl",
    "gsk_abcdefghijklmnopqrstuvwxyz012345",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlLXBhcnQ",
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c",  # 48 hex: not a digest length
    _random_base62(40, 1),
    base64.b64encode(bytes(range(7, 37))).decode(),
]


@pytest.mark.parametrize("secret", SECRET_SHAPES)
def test_secret_shapes_are_redacted(secret: str) -> None:
    text = f"the agent printed {secret} to its log"
    out = Scrubber().scrub_text(text)
    assert secret not in out
    assert out.startswith("the agent printed ") and out.endswith(" to its log")
    assert REDACTED in out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.def-ghi_jkl123", "Authorization: Bearer [REDACTED]"),
        ("curl https://bob:pa55w0rd@example.org/x", "curl https://[REDACTED]@example.org/x"),
        ("password=hunter2hunter2 ok", "password=[REDACTED] ok"),
        ("{'api_key': 'abcdefgh12345'}", "{'api_key': '[REDACTED]'}"),
        ('{"x-api-key": "abcdefgh12345"}', '{"x-api-key": "[REDACTED]"}'),
    ],
)
def test_labelled_secrets_keep_their_label(text: str, expected: str) -> None:
    assert Scrubber().scrub_text(text) == expected


BENIGN = [
    "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE  # the AWS docs' example",
    "sha256:" + hashlib.sha256(b"corpus").hexdigest(),
    "commit " + hashlib.sha1(b"x").hexdigest(),
    "run id " + uuid.UUID(int=0x1234_5678_9ABC_4DEF_8123_4567_89AB_CDEF).hex,
    "model Qwen3-Coder-30B-A3B-Instruct-GGUF-Q4_K_M and claude-sonnet-4-5-20250929",
    "path /work/main/agenteval/llm/anthropic_client.py line 120",
    "class ScenarioRunnerWithRetryAndTimeoutHandling2",
    "api_key_env: OPENAI_API_KEY",
    "max_tokens=1024 input_tokens=50 cache_read_tokens=0",
    "The judge returned verdict A after 3 turns and 1234567890 ms.",
    "tokens: 5",
]


@pytest.mark.parametrize("text", BENIGN)
def test_ordinary_text_is_left_alone(text: str) -> None:
    scrubber = Scrubber()
    assert scrubber.scrub_text(text) == text
    assert scrubber.leaks(text) == []


def test_leaks_report_labels_never_values() -> None:
    scrubber = Scrubber(secret_values={"env:X_API_KEY": KNOWN})
    labels = scrubber.leaks([f"a {KNOWN}", {"token": "sk-ant-api03-abcdefghijklmnop"}])
    assert labels == ["env:X_API_KEY", "field:token"]
    assert all(KNOWN not in label for label in labels)


def test_add_secret_later() -> None:
    scrubber = Scrubber()
    assert scrubber.scrub_text(KNOWN) == KNOWN
    scrubber.add_secret(KNOWN)
    assert scrubber.scrub_text(f"[{KNOWN}]") == f"[{REDACTED}]"


@settings(max_examples=200, deadline=None)
@given(
    before=st.text(max_size=40),
    after=st.text(max_size=40),
    secret=st.text(
        alphabet=string.ascii_letters + string.digits + "-_./+=", min_size=8, max_size=60
    ),
)
def test_known_secret_never_survives(before: str, after: str, secret: str) -> None:
    assume(secret not in REDACTED)
    scrubber = Scrubber(secret_values=[secret])
    out = scrubber.scrub({"text": before + secret + after, "list": [secret]})
    assert secret not in json.dumps(out)
    assert scrubber.scrub(out) == out, "scrubbing is idempotent"


def test_shape_prefilter_admits_everything_a_rule_would_redact() -> None:
    """The prefilter is an optimisation: it must never hide a match from the rules."""
    from agenteval.llm.provider_keys import PROVIDER_KEYS
    from agenteval.llm.scrub import _shape_rules

    rules = _shape_rules(())
    # The lookbehinds/boundaries are dropped for generation; what the rule's core matches
    # must still pass the prefilter.
    cores = [
        r"-----BEGIN RSA PRIVATE KEY-----", r"x://user:pass@", r"x://:pass@",
        r"x://[a-f0-9]{20,24}@", r"\?(?:token|sig|key|code)=[A-Za-z0-9]{4,8}",
        r"hooks\.slack\.com/services/[A-Z0-9]{8}",
        r"Bearer [A-Za-z0-9._~+/\-]{8,12}", r"Basic [A-Za-z0-9]{8,12}",
        r"Token [A-Za-z0-9]{8,12}", r" -u [a-z]{1,5}:[A-Za-z0-9]{4,8}",
        r" --(?:db-)?(?:password|pass|token|secret)=[A-Za-z0-9]{4,8}",
        r"(?i:[A-Z_]{0,6}(?:api[_-]?key|access[_-]?token|auth|secret|passwd?|pwd|sig|creds?))"
        r"[:=][A-Za-z0-9]{8,12}",
        r"(?:auth|HTTPBasicAuth)\(\"u\", \"[A-Za-z0-9]{4,8}\"\)",
        r"AC[0-9a-f]{32}\", \"[0-9a-f]{32}",
        r"[a-z]{1,6} ?[:=] ?[A-Za-z0-9+/_\-.]{16,20}",
        r"[0-9a-fA-F]{32,40}", r"[A-Za-z0-9+/]{32,40}={0,2}",
        # llm.credential_forms: a program of the table, .netrc and .pgpass lines
        r"(?:sshpass|redis-cli|ldapsearch|mysql|docker|smbclient|htpasswd|openssl) -[a-z] x",
        r"machine [a-z]{1,8} login [a-z]{1,5} password [A-Za-z0-9]{4,8}",
        r"[a-z]{1,8}:(?:[0-9]{2,5}|\*):[a-z]{1,5}:[a-z]{1,5}:[A-Za-z0-9]{4,8}",
        r"echo [A-Za-z0-9]{4,8} \| (?:sudo -S|chpasswd|docker login --password-stdin)",
        r"ftp> user [a-z]{1,5} [A-Za-z0-9]{4,8}",
        # llm.secret_rules' markup and sentences
        r"<(?:password|secret|apiKey)>[A-Za-z0-9]{4,8}</(?:password|secret|apiKey)>",
        r"key=\"(?:DbPassword|SmtpPass)\" value=\"[A-Za-z0-9]{4,8}\"",
        r"(?:the )?(?:password|passphrase|token|secret) (?:is )?[A-Za-z]{3}[0-9!]{3}",
        r"pw: [A-Za-z0-9]{6,8}",
        r"<input type=\"password\" value=\"[A-Za-z0-9]{4,8}\">",
        r"(?:hasło|password) (?:do [a-z]{3,6} )?to [A-Z][a-z]{3}[A-Z][a-z]{2}[A-Z][a-z]{2}",
        r"(?:login|credentials|sign-in) for [a-z]{3,6}: [a-z]{3,5} / [A-Za-z0-9!]{6,10}",
        r"(?:psk|wpa_psk)=\"[A-Za-z0-9]{8,12}\"",
        r"Account\.from_key\('0x[0-9a-f]{64}'\)",
        # llm.records: a value whose sibling field names a secret, in JSON, YAML and XML
        r"\{\"(?:key|name)\": \"[A-Za-z]{0,4}(?:token|secret|password)\", "
        r"\"value\": \"[A-Za-z0-9]{6,10}\"\}",
        r"\{\"value\": \"[A-Za-z0-9]{6,10}\", \"key\": \"(?:api_key|secret)\"\}",
        r"- name: [A-Z]{0,4}_?(?:PASSWORD|TOKEN)\n  value: [A-Za-z0-9]{6,10}",
        r"<name>(?:token|secret)</name><value>[A-Za-z0-9]{6,10}</value>",
        # llm.carrier_rules and the cookie forms: any webhook, a setter, a header, a jar
        r"https://[a-z]{3,6}\.webhook\.office\.com/[A-Za-z0-9]{16,20}1",
        r"(?:setx|setenv|set -gx) [A-Z]{1,4}_TOKEN [A-Za-z0-9]{8,12}",
        r"Cookie: [a-z]{3,6}=[a-z0-9]{16,20}1",
        r"cookies=\{\"[a-z]{3,6}\": \"[A-Za-z0-9]{16,20}1\"\}",
        # llm.said_secrets' pairs: a user:password by a login word, a short name, a second
        # password after a first, recovery codes
        r"[a-z]{3,6}:[A-Za-z]{3}[0-9]{4} for (?:ssh|sftp|creds|login)",
        r"(?:pw|pwd|pword|pass) for the [a-z]{3,6}: [A-Za-z]{3}[0-9]{4}",
        r"(?:password|token|pwd) is x and the [a-z]{3,6}'s is [A-Za-z]{3}[0-9]{4}",
        r"(?:recovery|backup|scratch|2fa|mfa) codes: [a-z0-9]{4}-[a-z0-9]{4} [a-z0-9]{4}-[0-9]{4}",
    ]  # fmt: skip
    # Every provider format, generated from its own pattern (word boundaries aside).
    cores += [pattern.replace(r"\b", "") for pattern in PROVIDER_KEYS.values()]
    assert len(cores) >= len(rules)

    # Each core drawn in every example, a dozen cores at a time (all at once is more data
    # than one Hypothesis example may hold).
    for start in range(0, len(cores), 12):
        _prefilter_admits(cores[start : start + 12])


def _prefilter_admits(chunk: list[str]) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from agenteval.llm.scrub import SHAPE_PREFILTER

    @settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.large_base_example])
    @given(st.data())
    def check(data: st.DataObject) -> None:
        for core in chunk:
            text = data.draw(st.from_regex(core, fullmatch=True))
            assert SHAPE_PREFILTER.search(text), (core, text)

    check()


def test_a_value_found_in_context_is_redacted_where_it_stands_bare_too() -> None:
    # The red team's case: the request pastes `STRIPE_SECRET_KEY=...`, the reference answer
    # and a tool result repeat the value alone, where no rule can tell it is a key.
    key = "Rk7vQ2mXw9Lp4TzN8sBf"
    case = {
        "request": f"my .env has DB_PASSWORD={key}, why does login fail?",
        "reference": f"The password {key} is wrong; rotate it.",
        "steps": [{"tool_result": f"{key}\n"}, {"note": "nothing here"}],
    }
    clean = Scrubber().scrub(case)
    assert key not in json.dumps(clean)
    assert clean["steps"][1] == {"note": "nothing here"}
    assert clean["reference"] == f"The password {REDACTED} is wrong; rotate it."
    # Within one text as well; and a separate value is a separate unit.
    text = Scrubber().scrub_text(f"export DB_PASSWORD={key}\necho {key}")
    assert key not in text
    assert Scrubber().scrub({"other": f"echo {key}"}) == {"other": f"echo {key}"}


def test_go_sum_hashes_and_ssh_fingerprints_are_look_alikes_left_alone() -> None:
    go_sum = "golang.org/x/sys v0.15.0 h1:h48lPFYpsTvQJZF4EKyI4aLHaev3CxivZmv7yZig9pc="
    fingerprint = "256 SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s ci@build (ED25519)"
    scrubber = Scrubber(personal=True)
    for text in (go_sum, fingerprint, f"{go_sum}\n{fingerprint}"):
        assert scrubber.scrub_text(text) == text
    # The shape is set aside, not whatever stands next to it.
    key = "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vW7"
    assert key not in scrubber.scrub_text(f"{go_sum} OPENAI_API_KEY={key}")


@pytest.mark.parametrize(
    ("in_context", "value"),
    [
        ("git clone https://jsmith:B1tbuck3t-AppPw-77@bitbucket.org/acme/infra.git",
         "B1tbuck3t-AppPw-77"),
        ("url=jdbc:sqlserver://db:1433;user=sa;password=Mang0!Tree42;encrypt=true",
         "Mang0!Tree42"),
        ("line 3: `jdbc:postgresql://pg:5432/l?user=app&password=Pl4typus.Bay`) and more",
         "Pl4typus.Bay"),
    ],
)  # fmt: skip
def test_the_value_a_rule_redacts_with_its_surroundings_goes_where_it_stands_alone(
    in_context: str, value: str
) -> None:
    clean = Scrubber().scrub({"request": f"do we use {value} elsewhere?", "answer": in_context})
    assert value not in json.dumps(clean)


def test_a_quoted_secret_runs_to_its_quote_whatever_brackets_it_holds() -> None:
    # A generated Django key holds `)`, `(` and `&`: the value used to end at the bracket and
    # the key's tail stayed in the text.
    value = "Wq8!zR2m(Lp4)vN7&xT9=kY3#bH6-cJ1"
    text = f"SECRET_KEY = '{value}'\nAPI_TOKEN: \"{value[::-1]}\""
    clean = scrub_text(text).text
    assert "Lp4)vN7&xT9" not in clean and value[::-1][10:22] not in clean, clean
    assert scrub_text("password=make_key(length)").text == "password=make_key(length)"
