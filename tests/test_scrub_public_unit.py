"""Look-alikes red team rt43g saw scrubbed or costing their case (issue 43), by family: a value
the same case shows in a public form and quotes bare elsewhere (`llm.unit_public`), a JWT
signed with a published secret (`llm.demo_tokens`), documented example keys, an LLM API's
object ids, powers of two, a decimal in a call, a fictional number without its area code, a
public key's fingerprint, an environment variable's NAME. Each beside the dishonest or
private twin that must still be redacted or cost its case. Values are made up here."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from agenteval.llm.private import PrivateScrubber
from agenteval.llm.residue import residue, strings_of
from agenteval.llm.scrub import REDACTED, Scrubber
from agenteval.llm.unit_public import hide

PERSONAL = Scrubber(personal=True)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(payload: dict[str, object], secret: bytes) -> str:
    head = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64url(json.dumps(payload).encode())
    mac = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64url(mac)}"


def _case(scrubber: PrivateScrubber, request: str, answer: str) -> tuple[dict[str, str], list[str]]:
    """The case scrubbed as a unit, and what the gates (residue) find in it, as
    `benchmarks.sessions.steps` reads it."""
    clean = scrubber.scrub({"request": request, "answer": answer})
    found = sorted({k for t in strings_of(clean) for k in residue(hide(t, scrubber.unit_public))})
    return clean, found


def test_a_jwt_signed_with_a_published_secret_is_a_demo_not_a_credential() -> None:
    demo = _jwt({"sub": "42", "name": "Ada Example"}, b"your-256-bit-secret")
    real = _jwt({"sub": "42", "name": "Ada Example"}, b"k3P!q9-our-real-signing-secret")
    assert (
        PERSONAL.scrub_text(f"paste {demo} into the debugger") == f"paste {demo} into the debugger"
    )
    clean = PERSONAL.scrub_text(f"paste {real} into the debugger")
    assert real.rsplit(".", 1)[1] not in clean and REDACTED in clean


@pytest.mark.parametrize(
    ("kept", "redacted"),
    [
        (
            "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE",
            "aws configure set aws_access_key_id AKIAQ4ZL7MW2RX9TB3NV",
        ),
        (
            "GITHUB_TOKEN=ghp_" + "x" * 36 + " in .env.example",
            "GITHUB_TOKEN=ghp_" + "Zq8Wm2Xr5Tn7" * 3,
        ),
    ],
)
def test_documented_placeholders_survive_and_keys_of_their_shape_do_not(
    kept: str, redacted: str
) -> None:
    assert PERSONAL.scrub_text(kept) == kept
    assert REDACTED in PERSONAL.scrub_text(redacted)


@pytest.mark.parametrize(
    "text",
    [
        "`msg_01Hq7ZxW3vN9pRt2LkYc8bDs` came back twice",
        "the tool_use `toolu_01Bv6TnQ2wXr8LmZp4Kd9sYh` has no result",
        "`17179869184` is the limit",  # 2^34
        "`2305843009213693951` again",  # 2^61 - 1
        "assert abs(y - 2.71828182845904523536) < 1e-12",
        "call 555-0187 for the demo",
        "password = os.environ['SMTP_PASSWORD']",
    ],
)
def test_public_numbers_and_ids_cost_no_case(text: str) -> None:
    clean = PERSONAL.scrub_text(text)
    assert clean == text and not residue(clean), residue(clean)


@pytest.mark.parametrize(
    "text",
    [
        "`Hq7ZxW3vN9pRt2LkYc8bDsQe` came back twice",  # no object's prefix: a token
        "`17179869191` is the limit",  # 2^34 + 7
        "call 555-0287 for the demo",  # outside the fictional range
        "password = 'SMTP_PASSWORD_2024_prod'",  # a quoted value, not a lookup
    ],
)
def test_their_private_twins_still_cost_the_case(text: str) -> None:
    assert residue(PERSONAL.scrub_text(text)) or REDACTED in PERSONAL.scrub_text(text)


def test_a_public_keys_fingerprint_survives_a_keys_value_does_not() -> None:
    fingerprint = "3AA5C34371567BD2" * 2 + "C0FFEE11"
    kept = f"import the maintainer's key (public) {fingerprint} from a keyserver"
    assert PERSONAL.scrub_text(kept) == kept and not residue(kept)
    assert fingerprint not in PERSONAL.scrub_text(f"api key: {fingerprint}")


def test_a_value_shown_public_in_the_case_passes_where_it_is_quoted_bare() -> None:
    digest = base64.b64encode(hashlib.sha512(b"left-pad-1.3.0").digest()).decode()
    ksuid = "2Lq7RvX9mTz3Wc8Nb4Kd6Ph1Ys5"
    scrubber = PrivateScrubber([], env={})
    for request, value in (
        (f'"integrity": "sha512-{digest}"', digest),
        (f"ksuid {ksuid} was seen twice", ksuid),
        ("the run took 8123456789012 ns", "8123456789012"),
    ):
        clean, found = _case(scrubber, f"Why?\n\n{request}", f"`{value}` is public, not a secret.")
        assert value in clean["request"] and value in clean["answer"], clean
        assert not found


def test_the_same_value_after_a_secrets_name_elsewhere_in_the_case_is_redacted() -> None:
    """A public form elsewhere does not launder a value a credential's word precedes, nor a
    value a rule redacts in its own public-looking form (hex handed to a key call)."""
    scrubber = PrivateScrubber([], env={})
    token = "Vb7Qm2Xr9Tn4Kp8Lw3Zc6Hd1"
    clean, _ = _case(scrubber, f"request id {token} failed", f"then API_KEY={token} was rejected")
    assert token not in json.dumps(clean)
    key = "5f2c" * 16
    clean, found = _case(scrubber, f"signer = Account.from_key('0x{key}')", f"`0x{key}` is it")
    assert key not in clean["request"] and (key not in clean["answer"] or found)
