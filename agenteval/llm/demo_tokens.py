"""Tokens that look like credentials but protect nothing: JSON Web Tokens signed with a secret
that documentation publishes (jwt.io's example is signed with `your-256-bit-secret`).
Anyone can forge such a token, so quoting one gives nothing away; the scrubber sets them
aside and the residue gate blanks them (`llm.public_ids.blank_public`). A token signed with
any other secret, or with an algorithm not listed here, stays a credential.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re

JWT = re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{20,}")
# Secrets documentation and tutorials sign their example tokens with.
PUBLISHED_SECRETS = (
    b"your-256-bit-secret",
    b"your-384-bit-secret",
    b"your-512-bit-secret",
    b"secret",
    b"your-secret-key",
)
_DIGESTS = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}


def _b64url(data: str) -> bytes:
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


def demo_jwt(token: str) -> bool:
    """Whether `token` is a JWT whose HMAC signature a published secret makes."""
    parts = token.split(".")
    if len(parts) != 3:
        return False
    try:
        header = json.loads(_b64url(parts[0]))
        signature = _b64url(parts[2])
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    algorithm = header.get("alg") if isinstance(header, dict) else None
    digest = _DIGESTS.get(algorithm) if isinstance(algorithm, str) else None
    if digest is None:
        return False
    signed = f"{parts[0]}.{parts[1]}".encode()
    return any(
        hmac.compare_digest(hmac.new(secret, signed, digest).digest(), signature)
        for secret in PUBLISHED_SECRETS
    )


def demo_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every demo token in `text`."""
    if "eyJ" not in text:
        return []
    return [m.span() for m in JWT.finditer(text) if demo_jwt(m.group(0))]
