"""The project's own secret rules: the shapes the maintained detectors miss or are too slow for.

Each rule is (name, pattern, decide): `decide` gets the match and returns its replacement, or
None to keep it. The rules were tuned on `eval/scrub/dev.jsonl` only; the held split
(`eval/scrub/held.jsonl`, `tests/test_scrub_corpus.py`) measures them. What they cover that
detect-secrets' plugins (`llm.detectors`) do not: a value after a secret-sounding NAME
whatever its shape (`DB_PASSWORD=x`, `SMTP_PASS: y`, names joined by `_` with no word
boundary), credentials in URLs and query strings, a token as a URL's user (Sentry DSNs),
`--password`-like flags, a (user, password) pair handed to an HTTP client, a secret named in
markup or a sentence (`<password>x</password>`, "the password is x"), and a random-looking
value after `=` or `:` under any name. Provider prefixes are `llm.provider_keys`' table, the
password flags of particular programs and credential files `llm.credential_forms`'.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

from agenteval.llm.cli_prompts import prompts_for_password
from agenteval.llm.provider_keys import PREFIX_HINT, PROVIDER_KEYS
from agenteval.llm.public_ids import PEM_BODY, PUBLIC_PEM_LABEL, named_public, public_at

REDACTED = "[REDACTED]"

Decide = Callable[[re.Match[str]], str | None]
Rule = tuple[str, re.Pattern[str], Decide]

# Hex strings of these lengths are far more often digests the project writes on purpose
# (uuid4().hex, git SHA-1, sha256 pins) than keys; known key values are still redacted.
DIGEST_HEX_LENGTHS = (32, 40, 64)
# What a NAME ends with when its value is a secret: `DB_PASSWORD`, `SMTP_PASS`, `apiKey`,
# `DD_API_KEY`, `client-secret`, `GOOGLE_CREDENTIALS`, `sig`. `tokens`, `key_id`, `api_key_env`
# end otherwise and are not.
SECRET_NAME = (
    r"[A-Za-z0-9_.\-]*?(?:passwd|password|passphrase|pass|pwd|pw|psk|secret|token|key|credentials?"
    r"|auth|signature|sig|private[_-]?key)"
)
_LOWER_RUN = re.compile(r"[a-z]{8,}")
_PLACEHOLDER = re.compile(
    r"(?i)^(?:[$%<{*]|\[redacted|x{3,}|\.{3}|none$|null$|nil$|true$|false$|undefined$"
    r"|empty$|required$|optional$|string$|str$|bytes$|secret$|password$|changeme$|example$"
    r"|your[_-]|my[_-]?(?:key|token|password|secret)$|env\b|os\.|process\.env|getenv|self\.)"
    # a documentation key: `sk-...your-key-here...`
    r"|^[\w\-]{0,8}\.{3}.*(?:your|here|example).*$"
)
# Code, not a value: `request.form`, `SecretStr`, `OPENAI_API_KEY` (a variable's name).
_CODE_VALUE = re.compile(
    r"^(?:[a-z_][a-z0-9_]*)(?:\.[a-z_][a-z0-9_]*)+$|^[A-Z][a-z]+(?:[A-Z][a-z]+)*$"
    r"|^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$"
)
_WORDS = re.compile(r"[a-z_./\-]+")
_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_NUMBER = re.compile(r"^[0-9][0-9.,_]*[a-z%]{0,3}$")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
# Data URIs (inline images), subresource-integrity hashes (package locks; cut short too, as a
# command line quoting one's first characters shows it), go.sum's module
# hashes (`h1:` + base64 SHA-256) and SSH key fingerprints (`SHA256:` + unpadded base64)
# are base64 by design: the scrubber sets them aside first. `SET_ASIDE_HINT` says whether
# a text may hold one.
SET_ASIDE = re.compile(
    r"data:[\w.+\-]+/[\w.+\-]+;base64,[A-Za-z0-9+/=\s]{16,}"
    # Public keys and certificates are published on purpose: an SSH public key line, a PEM
    # public key or certificate, and a bare SubjectPublicKeyInfo body (its DER header for
    # RSA, P-256, P-384 and Ed25519 keys, in base64, starts it).
    r"|\bssh-(?:ed25519|rsa|dss|ecdsa-sha2-nistp\d+)\s+AAAA[A-Za-z0-9+/]+={0,3}"
    # (a PEM block of any public label: `llm.public_ids.PUBLIC_PEM_LABEL`; its body base64
    # only, so no `password: …` line hides inside a block that says CERTIFICATE)
    r"|-----BEGIN (?P<pem>" + PUBLIC_PEM_LABEL + r")-----" + PEM_BODY + r"-----END (?P=pem)-----"
    r"|(?:MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE|MCowBQYDK2VwAyEA|MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAE"
    r"|MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA|MIICIjANBgkqhkiG9w0BAQEFAAOCAg8AMIICCgKCAgEA)"
    r"[A-Za-z0-9+/=]*"
    # a public JWK: a key type and public members only, each a string (a private one's d,
    # p, q..., or any other field, such as a password, keeps it out)
    r"|\{(?=[^{}]*\"kty\")(?:\s*\"(?:kty|use|alg|kid|crv|x|y|n|e|x5t|x5t#S256|x5u)\"\s*:\s*"
    r"\"[^\"\n]*\"\s*,?)+\s*\}"
    r"|\bsha(?:256|384|512)-[A-Za-z0-9+/]{20,}={0,2}"
    r"|(?<![\w:])h1:[A-Za-z0-9+/]{43}=(?![\w+/=])"
    r"|(?<![\w:])SHA256:[A-Za-z0-9+/]{43}(?![\w+/=])"
)
SET_ASIDE_HINT = re.compile(
    r"base64,|sha|SHA256:|h1:|ssh-|-----BEGIN|kty|MFkw|MCow|MHYw|MIIBIjAN|MIICIjAN"
)
# A placeholder in a key's shape: `sk-xxxxxxxxxxxxxxxxxxxx`, `ghp_XXXXXXXX...`,
# `sk-your-key-here`, and a provider's documented example in capitals (AWS's
# `AKIAIOSFODNN7EXAMPLE`: no generated key spells a word). A run of another letter
# (`sk-ant-QQQQ...`) is a test's fake key, redacted as the real one it stands for.
_EXAMPLE_KEY = re.compile(r"(?i)(?:your|my)[_\-]|[_\-]here\b|x{8,}|\*{8,}|(?-i:EXAMPLE)")
# ...of which these stand for a value wherever they are in it (not `my-`: a password may).
_PLACEHOLDER_RUN = re.compile(r"(?i:x{8,})|\*{8,}|EXAMPLE")
# A URL query's value that stands for one: `$RATES_TOKEN`, `${TOKEN}`, `<token>`, `{{token}}`.
_QUERY_PLACEHOLDER = re.compile(r"\$\{?\w+\}?|<[^>]*>|\{\{[^}]*\}\}|\*+|x{4,}|X{4,}")


def shannon_bits(text: str) -> float:
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _whole(_: re.Match[str]) -> str:
    return REDACTED


def example_key(token: str) -> bool:
    """A key-shaped placeholder or a provider's documented example, not a credential."""
    return _EXAMPLE_KEY.search(token) is not None


def _provider_key(match: re.Match[str]) -> str | None:
    return None if example_key(match.group(0)) else REDACTED


def _query_secret(match: re.Match[str]) -> str | None:
    value = match.group(0)[len(match.group(1)) :]
    return None if _QUERY_PLACEHOLDER.fullmatch(value) else match.group(1) + REDACTED


def decodes_to_prose(token: str) -> bool:
    """Base64 of a sentence (a test fixture, a message): no generated key decodes to words.
    Not an encoded credential (a kubeconfig's PEM, `user:password`): those name themselves."""
    import base64
    import binascii

    if len(token) < 16:
        return False
    try:
        text = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode("ascii")
    except (binascii.Error, ValueError):
        return False
    letters = sum(c.isalpha() or c == " " for c in text)
    return text.count(" ") >= 2 and letters >= 0.85 * len(text) and not _ENCODED_SECRET.search(text)


_ENCODED_SECRET = re.compile(r"(?i)private|pass|secret|token|key|auth|cred|begin|:")


def _hook_path(match: re.Match[str]) -> str | None:
    """A webhook's path redacted, unless it is the docs' placeholder (`T00000000/B00000000/
    XXXXXXXXXXXXXXXXXXXXXXXX`): runs of x, of zeros, EXAMPLE."""
    path = match.group(0)[len(match.group(1)) :]
    return None if _PLACEHOLDER_RUN.search(path.replace("0" * 8, "x" * 8)) else _keep_group1(match)


def _keep_group1(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED


def plausible_secret(value: str) -> bool:
    """A value after a secret's name that is not a placeholder, a reference, code or a count."""
    value = value.strip("\"'`")
    if len(value) < 4 or _PLACEHOLDER.search(value) or _NUMBER.fullmatch(value):
        return False
    if "\x00" in value:  # what the scrubber set aside (a public key): see SET_ASIDE
        return False
    if len(set(value)) <= 2:  # "****", "xxxx", "----"
        return False
    if _PLACEHOLDER_RUN.search(value):  # `ghp_xxxxxxxx...`, `AKIAIOSFODNN7EXAMPLE`
        return False
    return not _CODE_VALUE.fullmatch(value)


# A value field right after (other fields between): the field before held a NAME.
_VALUE_FIELD_FOLLOWS = re.compile(
    r"[\"']?\s*,\s*(?:\"\w+\"\s*:\s*(?:\"[^\"\n]*\"|true|false|null|-?\d+)\s*,\s*){0,4}"
    r"[\"']?(?i:value|val|default|current_?value|initial_?value)[\"']?\s*:"
)


def _named_value(match: re.Match[str]) -> str | None:
    value, after = match.group("value"), match.string[match.end() : match.end() + 1]
    if after in ("(", "[") or not plausible_secret(value):
        return None
    if named_public(match.string, match.start("value")) or public_at(
        match.string, match.start("value")
    ):
        return None  # "cache key: <digest>", a publishable key: public, not credentials
    if _VALUE_FIELD_FOLLOWS.match(match.string, match.end()):
        return None  # `"key": "algoliaAdminKey", "value": ...`: a name (llm.records)
    # Lowercase words after a lowercase name are code, prose or a YAML key's name
    # (`key=lambda`, "the --password flag", `key: home_city`); after an upper-case name
    # (`SMTP_PASS=mypassword`) they are a value.
    name = match.group(1)
    if not any(c.isupper() for c in name) and (_WORDS.fullmatch(value) or _SNAKE.fullmatch(value)):
        return None
    return match.group(1) + REDACTED


def _flag_value(match: re.Match[str]) -> str | None:
    """The value after a `--password`-like flag, unless its program's flag is a switch
    that prompts (`psql --password app_db`, `mysql --password shop`: the next word is the
    database)."""
    flag = match.group("flag")
    spaced = not match.group(1).rstrip("\"'").endswith("=")
    if spaced and prompts_for_password(match.string, match.start("flag"), flag):
        return None
    return _named_value(match)


# A placeholder in docs where a user:password pair goes: PASSWORD, <password>, ${PGPASS}.
_PAIR_PLACEHOLDER = re.compile(r"[A-Z_]+|<[^>]*>|\$\{?\w+\}?|\*+")


def _url_password(match: re.Match[str]) -> str | None:
    return None if _PAIR_PLACEHOLDER.fullmatch(match.group(1)) else REDACTED


def _pair_password(match: re.Match[str]) -> str | None:
    return None if _PAIR_PLACEHOLDER.fullmatch(match.group("value")) else match.group(1) + REDACTED


def _token_user(match: re.Match[str]) -> str | None:
    token = match.group(0)
    hexish = _HEX.fullmatch(token) and any(c.isdigit() for c in token)
    return REDACTED if hexish or random_looking(token) else None


def keep_plausible(match: re.Match[str]) -> str | None:
    """The text before the value kept, the value redacted unless it is a placeholder or
    public by design (an SSH public key, an integrity hash, a publishable key)."""
    if not plausible_secret(match.group("value")) or public_at(match.string, match.start("value")):
        return None
    return match.group(0)[: match.start("value") - match.start()] + REDACTED


def _call_key(match: re.Match[str]) -> str | None:
    """A key call's literal: redacted when it has a generated key's mix (64+ hex, or
    random-looking), never a name, a path or an address (`load_key('prod-signing')`)."""
    value = match.group("value")
    bare = value[2:] if value[:2] in ("0x", "0X") else value
    # 64 hex or more: a 32-byte key or seed (40 is an Ethereum address, public)
    hexish = _HEX.fullmatch(bare) is not None and len(bare) >= 64
    if not (hexish or random_looking(bare)) or segmented(value):
        return None
    return match.group(1) + REDACTED


def _credential(match: re.Match[str]) -> str | None:
    """After Bearer / Basic / Token: not "Bearer token authentication"."""
    return None if _WORDS.fullmatch(match.group("value")) else match.group(1) + REDACTED


def random_looking(token: str) -> bool:
    """Base62/64-ish text with the character mix and entropy of a generated key."""
    token = token.rstrip("=")
    upper = sum(ch.isupper() for ch in token)
    lower = sum(ch.islower() for ch in token)
    digits = sum(ch.isdigit() for ch in token)
    # All three character classes, high entropy and no word-length lowercase run keep
    # CamelCase identifiers out, while about 95% of random 32-character base62 keys (and
    # more of longer ones) still qualify; known values cover the rest.
    if min(upper, lower, digits) < 2 or _LOWER_RUN.search(token) or decodes_to_prose(token):
        return False
    return shannon_bits(token) >= 4.2


def _random_token(match: re.Match[str]) -> str | None:
    if named_public(match.string, match.start()):
        return None  # a digest its name says it is: "cache key: <43 base64url>"
    return REDACTED if random_looking(match.group(0)) else None


def segmented(value: str) -> bool:
    """Identifiers of short parts (model names, versions, slugs): not generated keys."""
    parts = [p for p in re.split(r"[-_.:/]", value) if p]
    return len(parts) >= 3 and max(len(p) for p in parts) < 12


def _assigned_random(match: re.Match[str]) -> str | None:
    """Any NAME=value / NAME: value whose value looks generated (16+ chars)."""
    value = match.group("value").rstrip(".")
    if _HEX.fullmatch(value) or _UUID.fullmatch(value) or segmented(value):
        return None  # digests, ids, versions and slugs
    if named_public(match.string, match.start("value")) or public_at(
        match.string, match.start("value")
    ):
        return None  # a digest or an id its name says it is, a key public by design
    classes = sum((any(c.isupper() for c in value), any(c.islower() for c in value))) + any(
        c.isdigit() for c in value
    )
    if classes < 3 or _LOWER_RUN.search(value) or shannon_bits(value) < 3.6:
        return None
    return match.group(1) + REDACTED


def _hex_key(exempt: tuple[int, ...]) -> Decide:
    def check(match: re.Match[str]) -> str | None:
        token = match.group(0)
        if len(token) in exempt:
            return None
        has_digit = any(ch.isdigit() for ch in token)
        has_letter = any(ch.isalpha() for ch in token)
        return REDACTED if has_digit and has_letter else None

    return check


# A necessary condition for any secret rule below to match: one cheap scan rejects most
# strings (tool names, statuses, prose) instead of twenty. Keep it a superset of every rule's
# start (tests/test_llm_scrub.py generates each rule's core and checks it passes).
SHAPE_HINT = (
    r"(?i:://|hooks\.|webhook|bearer|basic|pass|pwd|secret|token|key|cred|auth|sig|ssws"
    r"|digest|splunk|negotiate|ntlm|kennwort|mot de|contrase|clave|senha|wachtwoord|has[łl]o"
    r"|l[öo]senord|adgangskode|salasana|parola|пароль|密码|密碼|口令|パスワード|暗証|비밀번호|암호"
    r"|şifre|heslo|jelsz|lozinka|geslo|parool|parole|slapta|κωδικ|סיסמה|المرور|पासवर्ड|kh[ẩa]u|sandi"
    r"|-u\s|--user|PRIVATE|[?&]code=|pw[\"']?\s*[:=]|psk|log[ \-]?in|logon|sign[ \-]?in"
    r"|zugangs|anmelde|identifiants|logowania|\bpw\b|pword"
    r"|\b(?:ssh|s?ftp|scp|rdp|vnc|telnet)\b|recovery|backup|scratch|2fa|mfa)"
    r"|" + PREFIX_HINT + r"|[A-Za-z0-9+/]{32}|[=:]\s*[\"']?[A-Za-z0-9+/_\-.]{16}"
)
SHAPE_PREFILTER = re.compile(SHAPE_HINT)
_VALUE = r"(?P<value>[^\s\"'`,;()\[\]{}<>]+)"
# An environment variable's upper-case NAME that says its value is a secret.
ENV_SECRET = r"[A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|PASS|PWD|SECRET|TOKEN|KEY|CREDENTIALS?)[A-Z0-9_]*"


def _text_rules() -> list[Rule]:
    """Secrets a text marks as such: key blocks, URLs, headers."""
    return [
        (
            "private_key",
            re.compile(
                r"-----BEGIN[A-Z ]*PRIVATE KEY[A-Z ]*-----[\s\S]*?"
                r"(?:-----END[A-Z ]*PRIVATE KEY[A-Z ]*-----|$)"
            ),
            _whole,
        ),
        ("url_credentials", re.compile(r"(?<=://)[^/\s:@]*:([^/\s@]+)(?=@)"), _url_password),
        # A token as a URL's user (a Sentry DSN's key, https://<token>@github.com/...).
        ("url_token_user", re.compile(r"(?<=://)[A-Za-z0-9_\-]{20,}(?=@)"), _token_user),
        (
            "url_query_secret",
            re.compile(
                r"(?i)([?&;](?:access_?token|id_token|refresh_token|token|api_?key|key|sig"
                r"|signature|secret|client_secret|password|passwd|pwd|auth|code"
                r"|x-amz-signature|x-amz-security-token|x-goog-signature)=)(?!\[REDACTED\])"
                r"[^&#\s\"'<>`()]{4,}"
            ),
            _query_secret,
        ),
        (
            "webhook",
            re.compile(
                r"(?i)((?:hooks\.slack\.com/(?:services|workflows|triggers)"
                r"|discord(?:app)?\.com/api/webhooks|outlook\.office\.com/webhook)/)"
                r"[A-Za-z0-9/_\-@.]+"
            ),
            _hook_path,
        ),
        (
            "auth_header",
            re.compile(
                r"(?i)\b((?:Bearer|Basic|Token|SSWS|Digest(?!\s+[0-9a-f]{32,128}/\d)|ApiKey|Api-Key|GenieKey|Splunk"
                r"|DeepL-Auth-Key|sso-key|Negotiate|NTLM)\s+)(?P<value>[A-Za-z0-9._~+/\-]{8,}=*)"
            ),
            _credential,
        ),
    ]


def _named_rules() -> list[Rule]:
    """A value that its name, its flag or its call says is a secret."""
    quoted = r"(?P<q>[\"'])[^\"'\n]*(?P=q)\s*,\s*"
    return [
        (
            "cli_user_password",
            re.compile(
                r"((?:^|\s)(?:-u|--user|--proxy-user)[\s=]+[\"']?[^\s:\"'@]*:)"
                r"(?P<value>[^\s\"'@]+)"
            ),
            _pair_password,
        ),
        (
            "cli_password_flag",
            re.compile(
                r"(?i)((?:^|\s)(?P<flag>--[\w\-]*?(?:password|passwd|pass|token|api-key|apikey"
                r"|secret))(?:=|\s+)[\"']?)" + _VALUE
            ),
            _flag_value,
        ),
        # An environment file's or a shell's upper-case NAME=value: the value runs to the
        # next blank or quote whatever it holds (`django-insecure-%6&*oq(=h8!2...`).
        (
            "env_secret",
            re.compile(
                r"((?<![A-Za-z0-9_])" + ENV_SECRET + r"=[\"']?)(?!\[REDACTED\])"
                r"(?P<value>[^\s\"'`]{8,})"
            ),
            keep_plausible,
        ),
        (
            "named_secret",
            re.compile(
                r"(?i)((?<![A-Za-z0-9])" + SECRET_NAME + r"[\"']?\s*(?::|=|:=|=>)\s*(?P<q>[\"'`])?)"
                # A quoted value runs to its quote, brackets and all (a Django key's `)`).
                r"(?!\[REDACTED\])(?P<value>(?(q)[^\s\"'`]+|[^\s\"'`,;()\[\]{}<>]+))"
            ),
            _named_value,
        ),
        # The password of a (user, password) pair handed to an HTTP client's auth.
        (
            "auth_pair",
            re.compile(
                r"(\b(?:auth|HTTPBasicAuth|HTTPDigestAuth|BasicAuth|DigestAuth|HTTPProxyAuth)"
                r"\s*(?:=\s*)?[(\[]\s*" + quoted + r"[\"'])(?P<value>[^\"'\n]+)(?=[\"'])"
            ),
            keep_plausible,
        ),
        # A key handed to the call that takes it, positionally: `Account.from_key('0x..')`,
        # `new Wallet("0x..")`, `privateKeyToAccount(..)`, `SigningKey.from_string(..)`. The
        # call decides, not the shape (64 hex is a SHA-256 as often): a literal that reads
        # as generated, as the first argument of a call named for a key, secret or seed.
        (
            "key_call",
            re.compile(
                r"((?<![\w.])(?:[\w.]*?(?i:private_?key|secret_?key|signing_?key|from_?key"
                r"|from_?secret|from_?seed|from_?mnemonic|keypair|wallet|signingkey"
                r"|privatekey)[\w.]*)\s*\(\s*(?:bytes\.fromhex\(\s*)?(?P<q>[\"'`]))"
                r"(?P<value>[A-Za-z0-9+/_\-]{24,}={0,2})(?=(?P=q))"
            ),
            _call_key,
        ),
        # A Twilio auth token is plain hex: known by the account SID handed over with it.
        (
            "twilio_token",
            re.compile(r"(\bAC[0-9a-f]{30,34}\b[\"']?\s*[,:]\s*[\"']?)(?P<value>[0-9a-f]{32})\b"),
            keep_plausible,
        ),
    ]


def _generic_rules(exempt_hex: tuple[int, ...]) -> list[Rule]:
    """Provider formats, then anything random-looking where a value stands."""
    boundary_l = r"(?<![A-Za-z0-9+/=_\-])"
    boundary_r = r"(?![A-Za-z0-9+/=_\-])"
    return [
        *((name, re.compile(pattern), _provider_key) for name, pattern in PROVIDER_KEYS.items()),
        (
            "assigned_random",
            re.compile(
                r"((?<![A-Za-z0-9_])[A-Za-z_][\w.\-]*[\"']?\s*[:=]\s*[\"']?)"
                r"(?P<value>[A-Za-z0-9+/_\-.]{16,}=*)(?![A-Za-z0-9+/_\-])"
            ),
            _assigned_random,
        ),
        (
            "hex_key",
            re.compile(boundary_l + r"[0-9a-fA-F]{32,}" + boundary_r),
            _hex_key(exempt_hex),
        ),
        (
            "random_token",
            re.compile(boundary_l + r"[A-Za-z0-9+/]{32,}={0,2}" + boundary_r),
            _random_token,
        ),
    ]


def named_rules() -> list[Rule]:
    """The rules a text's own marks decide: key blocks, URLs, headers, then a value its
    name, flag or call says is a secret (before `llm.said_secrets`' sentences)."""
    return [*_text_rules(), *_named_rules()]


def generic_rules(exempt_hex: tuple[int, ...] = DIGEST_HEX_LENGTHS) -> list[Rule]:
    """Provider formats, then anything random-looking where a value stands: last."""
    return _generic_rules(exempt_hex)
