"""A secret that markup or a sentence names: `<password>pw</password>`, `key="DbPassword"
value="pw"`, an `<input type="password" value=...>`, "the password is pw", "hasło do panelu
to pw", "login for staging: admin / pw". Split from `llm.secret_rules`, whose helpers
(what a plausible value is) these rules share; the scrubber applies them after the named
rules and before the generic random-looking ones.
"""

from __future__ import annotations

import re

from agenteval.llm.secret_rules import (
    REDACTED,
    SECRET_NAME,
    Rule,
    keep_plausible,
    plausible_secret,
    segmented,
)


def said_rules() -> list[Rule]:
    """A value that markup or a sentence names as a secret: `<password>pw</password>`,
    `key="DbPassword" value="pw"`, "the password is pw", `Authorization: token pw`."""
    return [
        (
            "xml_secret",
            re.compile(
                r"(<(?P<tag>" + SECRET_NAME + r")>)(?P<value>[^<\s]{4,})(?=</(?P=tag)>)",
                re.IGNORECASE,
            ),
            keep_plausible,
        ),
        (
            "keyed_value",
            re.compile(
                # `key="DbPassword" value=`, `<input type="password" name="pw" value=`:
                # other attributes may stand between the name and the value
                r"((?i:\b(?:key|name|type)\s*=\s*[\"'])" + SECRET_NAME + r"[\"']"
                r"(?:\s+[\w\-:]+\s*=\s*(?:\"[^\"\n]*\"|'[^'\n]*'))*?"
                r"\s+(?i:value)\s*=\s*[\"'])(?P<value>[^\"'\n]{4,})(?=[\"'])",
                re.IGNORECASE,
            ),
            keep_plausible,
        ),
        (
            "said_secret",
            re.compile(
                r"((?i:\b" + _SAID_NAME + r")(?:,?[ \t]+[\w'’\-]+){0,4}?,?[ \t]*"
                r"(?:[ \t](?i:" + _SAID_VERB + r")[ \t]+|[ \t]*[:=][ \t]*)[\"'`«“]?)"
                # a password has a digit or a symbol: the words before it are passed over
                r"(?=[^\s\"'`»”]*[0-9!#%&*+?@^~_\-])(?P<value>[^\s\"'`»”]{6,})"
            ),
            _said_value,
        ),
        # A password of letters alone, mixed case inside ("hasło do panelu to ZielonyPrk"):
        # only after a word for a password, where a class or a token type is not said.
        (
            "said_password_letters",
            re.compile(
                r"((?i:\b" + _PASSWORD_NAME + r")(?:,?[ \t]+[\w'’\-]+){0,4}?,?"
                r"(?:[ \t](?i:" + _SAID_VERB + r")[ \t]+|[ \t]*[:=][ \t]*)[\"'`«“]?)"
                r"(?P<value>[A-Za-zÀ-ÿ]*[a-zß-ÿ][A-ZÀ-Þ][A-Za-zÀ-ÿ]*)(?![\w\-/]|\.\w)"
            ),
            _said_letters,
        ),
        _unspaced_rule(),
        # A login's user and password, slash-separated: "login for staging: admin / pw".
        (
            "said_login_pair",
            re.compile(
                r"((?i:\b(?:log[ \-]?in|logon|sign[ \-]?in|credentials?|creds"
                r"|zugangsdaten|anmeldedaten|identifiants|dane\s+logowania|credenciales)\b)"
                r"[^:\n]{0,40}?(?::|[ \t](?i:as|is|are|=))[ \t]*[\"'`]?[\w.@+\-]{2,}[\"'`]?"
                r"[ \t]+/[ \t]+[\"'`]?)"
                r"(?P<value>[^\s\"'`]{4,})"
            ),
            keep_plausible,
        ),
        *pair_rules(),
        # ...and the value before its name: "is `x` still the staging password?"
        (
            "said_secret_before",
            re.compile(
                r"(?<![\w\-])([\"'`«“]?)(?P<value>[^\s\"'`»”]{6,})[\"'`»”]?"
                # "x is the password", or a question's quoted "`x` still the password?"
                r"(?:[ \t]+(?i:is|was|are)|(?<=[\"'`»”])(?=[ \t]+(?i:still|really|now|also)\b))"
                r"(?:[ \t]+(?i:still|now|not|also|really))?"
                r"(?:[ \t]+(?i:the|our|my|your|his|her|their|a))?"
                r"(?:[ \t]+[\w\-]+){0,2}?[ \t]+(?i:" + _SAID_NAME + r")\b"
            ),
            _said_before,
        ),
    ]


# A password's name in more of the languages users write in (spaced scripts: the sentence
# rules below read the words between it and its value).
_MORE_NAMES = (
    r"şifre(?:si|niz|m)?|parolas[ıi]|heslo|jelsz[óo]|lozinka|geslo|parool|parole"
    r"|slapta[žz]odis|κωδικ[όο]ς|סיסמה|كلمة\s+المرور|पासवर्ड|m[ậa]t\s+kh[ẩa]u|kata\s+sandi"
)
# Scripts written without spaces between words (Chinese, Japanese, Korean): the name, then a
# copula or a particle glued to it ("密码是 x", "비밀번호는 x", "パスワードは x"), then the value.
_UNSPACED_NAME = r"(?:密码|密碼|口令|パスワード|暗証番号|비밀번호|암호)"
_UNSPACED_LINK = r"(?:是|为|為|：|:|は|が|는|은|:)?"


# What a sentence calls a secret, in the languages users write in, and the words between
# it and its value ("my password is x", "the client secret to x", "mot de passe est x").
_SAID_NAME = (
    r"(?:password|passwd|passphrase|pass\s?code|pwd|token|secret|api[ _\-]?key|access[ _\-]?key"
    r"|private[ _\-]?key|secret[ _\-]?key|passwort|kennwort|zugangsdaten|mot\s+de\s+passe"
    r"|contrase[ñn]a|clave|senha|wachtwoord|has[łl]o|l[öo]senord|adgangskode|passord"
    r"|salasana|parola(?:\s+d'ordine)?|пароль|密码|パスワード|비밀번호|" + _MORE_NAMES + r")"
)
# The words that name a password (not a token or a key, whose "value" is often a type name).
_PASSWORD_NAME = (
    r"(?:password|passwd|passphrase|passwort|kennwort|mot\s+de\s+passe|contrase[ñn]a|senha"
    r"|wachtwoord|has[łl]o|l[öo]senord|adgangskode|passord|salasana|пароль|" + _MORE_NAMES + r")"
)
_SAID_VERB = (
    r"is|was|reads|to|as|=|:|ist|lautet|war|auf|est|était|es|era|é|è|er|är|jest|is\s+now"
    r"|(?:was|has\s+been|is|got)\s+(?:reset|changed|set|rotated|updated)\s+to"
    r"|set\s+to|changed\s+to|now"
)
# What a password looks like where a sentence names it: a letter and a digit or symbol,
# none of a call's, a path's or a placeholder's marks.
_SAID_SHAPE = re.compile(r"(?=.*[A-Za-z])(?=.*[0-9!#%&*+?@^~_\-])[^()<>{}\[\]$/\\]+")


_VERSION = re.compile(r"[vV]?\d+(?:\.\d+)+(?:[-+][\w.]+)?")


def _said_value_ok(value: str) -> bool:
    if value.startswith("-") or not _SAID_SHAPE.fullmatch(value) or _VERSION.fullmatch(value):
        return False  # a flag (`--password --host`), a call, a path, a version
    if value == value.lower() and segmented(value):
        return False  # a slug: my-service-v2
    return plausible_secret(value) and not value.lower().startswith(("http", "www."))


def _said_value(match: re.Match[str]) -> str | None:
    value = match.group("value").rstrip(".,;:!?)")
    if not _said_value_ok(value):
        return None
    return match.group(1) + REDACTED + match.group("value")[len(value) :]


def _said_before(match: re.Match[str]) -> str | None:
    value = match.group("value")
    if _said_value_ok(value):
        return match.group(0).replace(value, REDACTED, 1)
    return None


def _unspaced_rule() -> Rule:
    # "北京服务器的密码是 x", "서버 비밀번호는 x": no word boundary before the name, and
    # the link glued to it.
    return (
        "said_unspaced",
        re.compile(
            r"(" + _UNSPACED_NAME + _UNSPACED_LINK + r"[ \t]*[\"'`«“「]?)"
            r"(?P<value>[A-Za-z0-9!#%&*+?@^~_\-.]{6,}?)(?=[\s\"'`»”」；;，,。.]|$)"
        ),
        _said_unspaced,
    )


def _said_unspaced(match: re.Match[str]) -> str | None:
    value = match.group("value").rstrip(".")
    mixed = value.lower() != value and value.upper() != value
    if not (_said_value_ok(value) or (mixed and len(value) >= _LETTERS_MIN)):
        return None
    return match.group(1) + REDACTED + match.group("value")[len(value) :]


_LETTERS_MIN = 8  # "Required", "Optional": shorter words a sentence may put after "password is"


_CAMEL_PART = re.compile(r"[A-ZÀ-Þ][a-zß-ÿ]*")
_VOWEL = re.compile(r"[aeiouyàáâäãåæèéêëìíîïòóôöõøùúûüýÿąęó]", re.IGNORECASE)


def _said_letters(match: re.Match[str]) -> str | None:
    """Redacted unless it reads as a class's name: `PasswordField` is words, each with a
    vowel; `ZielonyPrkHsc` has parts no language pronounces."""
    value = match.group("value")
    if len(value) < _LETTERS_MIN or value.lower() == value:
        return None
    parts = _CAMEL_PART.findall(value)
    if "".join(parts) == value and all(_VOWEL.search(part) for part in parts):
        return None
    return match.group(1) + REDACTED


# A word that says a user:password pair is a login's: "root:pw for ssh login" (each one
# the scrubber's prefilter, secret_rules.SHAPE_HINT, admits).
_LOGIN_WORD = re.compile(
    r"(?i:\b(?:log[ \-]?ins?|logon|sign[ \-]?in|ssh|sftp|scp|ftp|rdp|vnc|telnet|creds?"
    r"|credentials?|user(?:name)?\s*/\s*pass(?:word)?)\b)"
)
_NEAR = 40  # characters either side of a pair its login word may stand in
# A word for a password shortened ("pw for the test tenant: x", "pass for the VPN: x").
_SHORT_NAME = r"(?:pw|pwd|pword|pass|passwd|passw)"
# A recovery code: groups of letters and digits joined by dashes, or one run with a digit.
_CODE = r"(?:[A-Za-z0-9]{4,6}-){1,3}[A-Za-z0-9]{4,6}|(?=[A-Za-z]*\d)[A-Za-z0-9]{6,16}"


def pair_rules() -> list[Rule]:
    """Secrets a sentence gives by position: a user:password pair beside a login's word,
    a shortened password name with words before its colon, a second password referred to
    by "'s is", a list of recovery codes after its label."""
    return [
        (
            "said_user_pair",
            re.compile(
                r"(?<![\w.:/@\-])([a-z_][\w.\-]{0,31}:)(?P<value>[^\s:@/\"'`]{6,})(?![:@/\w])"
            ),
            _login_pair,
        ),
        (
            "said_short_name",
            re.compile(
                r"((?i:\b" + _SHORT_NAME + r")(?:[ \t]+[\w'’\-]+){0,5}?[ \t]*:[ \t]*[\"'`]?)"
                r"(?P<value>[^\s\"'`]{6,})"
            ),
            _said_value,
        ),
        (
            "said_again",
            re.compile(
                r"(?<=\w)(['’]s[ \t]+(?:one[ \t]+)?(?:is|was|=|:)[ \t]+[\"'`]?)"
                r"(?P<value>[^\s\"'`]{6,})"
            ),
            _said_again,
        ),
        (
            "recovery_codes",
            re.compile(
                r"((?i:\b(?:recovery|backup|scratch|emergency|mfa|2fa|one[ \-]time)[ \t]+codes?)"
                r"(?:[^:\n]{0,30}:|[ \t]*:?[ \t]*\n)[ \t]*)"
                r"(?P<list>(?:[\s,;*•\-]*(?:\d{1,2}[.)][ \t]*)?(?:" + _CODE + r")(?![\w\-]))+)"
            ),
            _codes,
        ),
    ]


def _login_pair(match: re.Match[str]) -> str | None:
    text, start, end = match.string, match.start(), match.end()
    if not _LOGIN_WORD.search(text, max(0, start - _NEAR), min(len(text), end + _NEAR)):
        return None
    return _said_value(match)


def _said_again(match: re.Match[str]) -> str | None:
    """A second password after a first one named in the same text ("the password is x
    and the admin panel's is y"): only where a word for a password came before."""
    before = match.string[: match.start()]
    if not re.search(r"(?i:\b" + _SAID_NAME + r"\b|\b" + _SHORT_NAME + r"\b)", before):
        return None
    return _said_value(match)


def _codes(match: re.Match[str]) -> str | None:
    """Each code of the list; codes without a digit only as a list of two or more."""
    codes = re.findall(_CODE, match.group("list"))
    if len(codes) < 2 and not any(c.isdigit() for c in "".join(codes)):
        return None
    codes_at = r"(?<![\w\-])(?:" + _CODE + r")(?![\w\-])"
    return match.group(1) + re.sub(codes_at, REDACTED, match.group("list"))
