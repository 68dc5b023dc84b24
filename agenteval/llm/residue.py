"""The last line of defence: what still LOOKS private after scrubbing, whatever rule missed it.

The scrubber (`llm.private`) redacts what its rules know; a kind no rule knows, or a wording
none expects, passes it. `residue(text)` errs on the side of dropping: it names the shapes a
private value has whatever its kind, and the caller drops the unit that holds one (a case from
a dataset, a reply from the response cache: then it is simply not cached), never the whole
output. The shapes, each a family rather than a kind:

- a long digit run: 7 digits or more in any grouping (spaces, dashes, dots, slashes,
  brackets), unless it is a known-safe form (a date, a time, an IPv4 address, a version, an
  epoch in seconds or milliseconds, a decimal, a round number, a number with its unit);
- an identifier-shaped token (8+ characters, letters and digits) near a word naming a document,
  a credential or a person ("passport", "Führerschein", "licence", "tax", "born", "cookie",
  "token", "secret" ..., in English, German, French, Spanish, Italian, Portuguese, Dutch and
  Japanese);
- an e-mail address in any obfuscation (`a at b dot com`, `a [at] b [dot] com`, `a(at)b.de`,
  percent-encoded), other than one on a documentation domain or the scrubber's own fixture;
- a street address (a number beside a street word of many countries, a postcode before a
  city, a UK postcode, a Japanese address's 丁目/番地 or 〒);
- a high-entropy token of 20+ characters (a random key no prefix announces), unless a
  known-safe form (hex digests, UUIDs, ULIDs, public keys, certificates, base64 images,
  subresource-integrity and go.sum hashes); a base64 run that decodes to text is read as text.

Public identifiers and numbers (DOIs, tracking numbers, versions, times, cache keys and
other ids a name says are public ...) are blanked first: `llm.public_ids` is their one home.
It reads the text as given and as decoded (`llm.views`). It never says what the value was.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from agenteval.llm.personal import FIXTURE_EMAIL, RESERVED_EMAIL
from agenteval.llm.public_ids import NUMBER_NAME, blank_public, public_named, safe_number
from agenteval.llm.secret_rules import REDACTED
from agenteval.llm.views import decoded_views

# What the credential rule still reads (it sees hex: a key may be hex): placeholders, ids.
_KEEP = re.compile(
    r"\[REDACTED\]|\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
    r"|\$\{?\w+\}?|<[\w\- ]+>|\b\w*(?:xxxx|XXXX|EXAMPLE|example|your|YOUR|dummy|changeme)\w*"
)

# Hex digests and ids (git SHAs, ObjectIds, container ids): safe, but the credential rule
# reads them (a key may be hex).
# Either case, not mixed: a GPG key id or fingerprint is written in capitals (16 or 40
# digits). Capitals shorter than a long key id are not taken for hex: a document number
# such as a letter and nine digits is all hex characters too.
_HEX = re.compile(
    r"(?<![A-Za-z0-9+/])(?:(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,128}"
    r"|(?=[0-9A-F]*[A-F])(?=[0-9A-F]*\d)[0-9A-F]{16,128})(?![A-Za-z0-9+/])"
)

# -- long digit runs ------------------------------------------------------------------------
_DIGIT_RUN = re.compile(
    r"(?<![A-Za-z0-9_.,/])(?<![A-Za-z0-9]-)"
    r"\+?\(?\d+\)?(?:(?:[ \-./]|\s?-\s?)\(?\d+\)?)*(?![A-Za-z0-9_])"
)
MIN_DIGITS = 7


def _safe_number(text: str, match: re.Match[str], named: bool = False) -> bool:
    return safe_number(text, match, MIN_DIGITS, named)


def _digit_runs(text: str) -> str | None:
    return next((m.group(0) for m in _DIGIT_RUN.finditer(text) if not _safe_number(text, m)), None)


def _named_number(text: str) -> str | None:
    """A long digit run a word beside it says is a document's, a phone's or a person's."""
    for match in _DIGIT_RUN.finditer(text):
        after = text[match.end() : match.end() + 12]
        named = _near(_DOCUMENT, text, match) or re.match(r"\W{0,3}(?:です|でした)", after)
        if named and not _safe_number(text, match, named=True):
            return match.group(0).strip(" -./")
    grouped = _GROUPED_VALUE.search(text)
    return grouped.group("value") if grouped else None


# -- identifiers near a word naming a document, a credential or a person --------------------
_DOCUMENT = re.compile(
    r"(?i:\b(?:passport|pass\s?port|reisepass|pass(?:nummer|nr)|passeport|pasaporte|passaporto"
    r"|paspoort|licen[cs]e|f[üu]hrerschein|permis|carnet|patente|carta\s+d'identit|cart[ãa]o"
    r"|rijbewijs|identit|ausweis|personalausweis|insee|s[ée]cu(?:rit[ée])?"
    r"|codice\s+fiscale|steuer|insurance|versicher\w*|assurance|seguro|born|birth|geboren"
    r"|\w*(?:nummer|number|num[ée]ro|n[úu]mero|numero)"
    r"|geburt|n[ée]e?\s+le|naci(?:do|da|miento)|nato|nata|nascid|geboortedatum|address|adresse"
    r"|anschrift|direcci[óo]n|indirizzo|endere[çc]o|adres|iban|phone|mobile|handy|portable"
    r"|celular|cellulare|telefoon|member|patient|customer|employee|account)"
    r"|\b(?:tax|vat|ssn|sin|nino|bsn|aadhaar|pan|dni|nie|nif|cpf|dob|tel|id|nr|no|cf|dl"
    r"|rfc|curp|rut|cuit|cnpj|nir|vin|imei|iccid|msisdn|pesel|nhs|abn|tfn)\b)"
    r"|旅券|パスポート|免許|運転|住所|電話|携帯|生年月日|誕生|マイナンバー|個人番号|保険"
    r"|番号|口座"
)
# A value in groups right after a document's name, letters among its digits:
# `Sozialversicherungsnummer 12 150870 M 123`, `NI: AB 12 34 56 C`.
_GROUPED_VALUE = re.compile(
    f"(?:{_DOCUMENT.pattern})"
    r"[ \t]*(?:(?i:number|no\.?|nr\.?|n[°º]|#))?[ \t]*[:：=#\-]?[ \t]*"
    r"(?P<value>(?=(?:[A-Z ]*\d){5})[A-Z0-9](?:[A-Z0-9]|[ \-./](?=[A-Z0-9])){5,24})"
)
_CREDENTIAL = re.compile(
    r"(?i:\b(?:cookie|session|token|secret|password|passwort|mot\s+de\s+passe|contrase[ñn]a"
    r"|senha|wachtwoord|passwd|passphrase|requirepass|masterauth|identified\s+by|api[\s_\-]?key"
    r"|credential|bearer|login|auth|apikey|access[\s_\-]?key|private[\s_\-]?key|totp|otp"
    r"|2fa|mfa|seed|mnemonic|recovery|backup\s+codes?|serial|activation|response\s*=|signature"
    r"|hmac)|\b(?:pwd|pass|key|sid|pin)\b)|暗証|パスワード|鍵|トークン|シード"
)
_ID_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_\-/.])(?=[A-Za-z0-9\-]*\d)(?=[A-Za-z0-9\-]*[A-Za-z])"
    r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){7,}(?![A-Za-z0-9_/])"
)
# A credential's value: 8+ characters of at least two kinds (upper, lower, digit, symbol).
_CRED_TOKEN = re.compile(r"(?<![\w\-/.$%{@])[\w!#$%*+\-.?^~]{8,}(?![\w/@])")
_NEAR = 40  # characters between the naming word and the token
_CODE_WORD = re.compile(
    r"[A-Z][A-Za-z]*(?:-[A-Z][A-Za-z]*)+|"  # an HTTP header's name: X-Api-Key
    r"[a-z]+(?:[A-Z][a-z]+)+\d*|[A-Z]*(?:[A-Z][a-z]+)+\d*|[a-z]+(?:[-_.][a-z]+)+[-_]?\d*"
    r"|[A-Za-z]+\d{1,3}|[A-Za-z]+(?:-[A-Za-z]+)*-v?\d+(?:[-.]\d+)*|[A-Z_]+|[a-z_]+|\d+"
)


def _near(pattern: re.Pattern[str], text: str, match: re.Match[str]) -> bool:
    return bool(pattern.search(text[max(0, match.start() - _NEAR) : match.start()]))


def _named_identifier(text: str) -> str | None:
    for match in _ID_TOKEN.finditer(text):
        token = match.group(0)
        if _CODE_WORD.fullmatch(token) or token.lower().startswith(("http", "utf", "sha", "md5")):
            continue  # camelCase, kebab-case, a word with a small number: names, not ids
        after = text[match.end() : match.end() + 12]
        if _near(_DOCUMENT, text, match) or re.match(r"\W{0,3}(?:です|でした)", after):
            return token
    return None


def _code_path(token: str) -> bool:
    """A code word or a dotted path of them: `HTTPBasicAuth`, `aiohttp.BasicAuth`."""
    return all(_CODE_WORD.fullmatch(part) for part in token.split("."))


# A quoted value (spaces allowed) or a word list (a wallet's seed) after a credential's name.
_PHRASE = re.compile(
    r"(?i:pass\s?phrase|password|passwort|mot\s+de\s+passe|contrase[ñn]a|senha|seed|mnemonic"
    r"|recovery\s+(?:phrase|words))[^\n\"'`]{0,24}?(?:[\"'`](?P<quoted>[^\"'`\n]{8,80})[\"'`]"
    r"|[:=]?\s*(?P<words>(?:[a-z]{3,8}\s+){11,23}[a-z]{3,8}\b)"
    # stated in a sentence: "the wifi password is tangerine-otter-42" (a digit or a symbol
    # in it: "the password is required" is prose)
    r"|(?<=\s)(?i:is|was|lautet|ist|war|est|es|era|è|é|=)\s+"
    r"(?P<stated>(?=[^\s\"'`,;]*[\d!@#%^&*+?~])[^\s\"'`,;]{8,64}))"
)
# Coordinates precise to a house (5+ decimals: a city's 4 are public) beside a word
# saying whose place they are.
# A pair of house-level coordinates, also when the scrubber took one half (or its digits)
# and left the other: "(48.137154, 11.[REDACTED])" still says where someone lives.
_COORDINATES = re.compile(
    r"-?\d{1,2}\.\d{5,},\s*(?:-?\d{1,3}\.\d{5,}|(?:-?\d{1,3}\.)?\[REDACTED\])"
)
_PLACE = re.compile(r"(?i:gps|\blat|\blng|\blon|coord|location|standort|position|home|wohn|位置)")


# A quoted NAME read from the environment or a config is the secret's name, not its value:
# `password = os.environ['DB_PASSWORD']`, `getenv("SMTP_PASS")`, `ENV["PG_PASSWORD"]`.
_NAME_LOOKUP = re.compile(
    r"(?:environ|getenv|env|ENV|secrets|config|settings)\s*[\[(.]\s*(?:get\s*\(\s*)?[\"'`]$"
)
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def _phrase(text: str) -> str | None:
    match = _PHRASE.search(text)
    if match is None:
        return None
    quoted = match.group("quoted")
    if (
        quoted
        and _ENV_NAME.fullmatch(quoted)
        and _NAME_LOOKUP.search(text, 0, match.start("quoted"))
    ):
        return None
    value = (match.group("quoted") or match.group("words") or match.group("stated")).rstrip(".!?")
    if REDACTED in value or value.startswith("$") or _TEMPLATE.fullmatch(value.strip()):
        return None
    return value


# A template's slot where the value will go (Jinja/Ansible, shell, docs): no value yet.
_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}|\{%[^%]*%\}|<[^<>]*>|%\([\w.]+\)s")


def _coordinates(text: str) -> str | None:
    for match in _COORDINATES.finditer(text):
        if _near(_PLACE, text, match):
            return match.group(0)
    return None


def _credential_value(text: str) -> str | None:
    """A value beside a word naming a credential (hex too: `wandb login <40 hex>`)."""
    for match in _CRED_TOKEN.finditer(text):
        token = match.group(0).strip(".-?!")
        classes = {_class(c) for c in token} - {3}
        if len(token) < 8 or len(classes) < 2 or _code_path(token):
            continue
        if re.fullmatch(
            r"[\w.\-]+\.(?:py|js|ts|json|ya?ml|toml|md|txt|sh|cfg|ini|conf|env)", token
        ):
            continue  # a file name
        before = public_named(text[max(0, match.start() - _NEAR) : match.start()])
        if re.fullmatch(r"[0-9a-f]+", token):  # a digest unless its name stands right before
            before = "" if NUMBER_NAME.search(before[:-2]) else before[-16:]
        if _CREDENTIAL.search(before):
            return token
    return None


# -- a date beside a word saying it is someone's birth ----------------------------------------
_BIRTH = re.compile(
    r"(?i:\bborn\b(?!\s+(?:of|from|out)\b)|\bdob\b|birth|geboren|geb\.|geburt|\bn[ée]e?\b|naissance|naci(?:do|da|miento)"
    r"|\bnat[oa]\b|nascit|nascid|geboortedatum|f[öo]dd)|生年月日|誕生|生まれ|生）|生\)|\d日生"
)
_DATE = re.compile(
    r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}[./\-]\d{1,2}[./\-]\d{2,4}\b"
    r"|(?:\d{4}|(?:昭和|平成|令和|大正)\s?\d{1,2})年\s?\d{1,2}月\s?\d{1,2}日"
    r"|\b\d{1,2}\.?\s+(?:de\s+)?[A-Za-zäéèû]{3,10}\.?\s+(?:de\s+)?\d{4}\b"
    r"|\b[A-Z][a-z]{2,8}\.?\s+\d{1,2},?\s+\d{4}\b"
)


def _birth_date(text: str) -> str | None:
    for match in _DATE.finditer(text):
        start = max(0, match.start() - _NEAR)
        birth = _BIRTH.search(text[start : match.end() + 24])
        if birth and birth.start() < match.end() - start + 8:
            return match.group(0)
    return None


# -- e-mail in any obfuscation --------------------------------------------------------------
_AT = (
    r"(?:@|＠|\s*[\[({<]\s*(?i:at|@|chiocciola|arroba)\s*[\])}>]\s*"
    r"|\s+(?i:at|chiocciola|arroba|klammeraffe|apenstaart|snabel-a)\s+|\s*(?i:%40)\s*)"
)
_DOT = (
    r"(?:\.|\s*[\[({<]\s*(?i:dot|punkt|point|punto|ponto|punt)\s*[\])}>]\s*"
    r"|\s+(?i:dot|punkt|punto|ponto|punt|point)\s+)"
)
_EMAILISH = re.compile(
    rf"(?<![\w.\-])[A-Za-z0-9][\w.+\-]*{_AT}[A-Za-z0-9][\w\-]*(?:{_DOT}[A-Za-z0-9][\w\-]*)*"
    rf"{_DOT}(?i:[a-z]{{2,12}})\b"
)


def _email(text: str) -> str | None:
    for match in _EMAILISH.finditer(text):
        found = match.group(0)
        plain = re.sub(r"\s+", "", found)
        if FIXTURE_EMAIL.fullmatch(plain) or RESERVED_EMAIL.search(plain):
            continue
        spelled = re.search(r"[\[({<]|(?i:\b(?:dot|punkt|punto|ponto|punt)\b)", found)
        if "@" not in found and "＠" not in found and not spelled:
            continue
        return found
    return None


# -- street addresses -----------------------------------------------------------------------
_ADDRESS = re.compile(
    "|".join(
        [
            # DE/AT/CH, NL: Hauptstraße 12, Keizersgracht 123
            r"\b[A-ZÄÖÜ][\wäöüß\-]*(?i:stra(?:ß|ss)e|str\.|weg|gasse|platz|allee|damm|ufer"
            r"|straat|laan|gracht|plein|kade|steeg)\s+\d{1,4}[a-z]?\b",
            # a flat before its street: Flat 3, 27 Kingsway, Cardiff
            r"\b(?:Flat|Apt\.?|Apartment|Suite|Unit|Wohnung|Whg\.|Piso|Appartement)\s+\d{1,4}[A-Z]?,"
            r"[^\n;]{3,60}",
            # PL: ul. Marszałkowska 84/92, 00-514 Warszawa
            r"(?i:\b(?:ul\.|ulica|al\.|aleja|os\.))\s+[A-ZĄĆĘŁŃÓŚŹŻ][\wąćęłńóśźż.\-]+"
            r"(?:\s+[A-ZĄĆĘŁŃÓŚŹŻ][\wąćęłńóśźż\-]+)*\s+\d{1,4}[a-z]?(?:/\d{1,4})?",
            r"(?<![\w.:/\-#])\d{2}-\d{3}\s+[A-ZĄĆĘŁŃÓŚŹŻ][a-ząćęłńóśźż]{2,}",
            # DE without a street word: Am Sonnenhang 7, An der Lehmkuhle 3
            r"\b(?:Am|An\s+der|An\s+den|Im|In\s+der|Auf\s+der|Auf\s+dem|Zum|Zur|Unter\s+den)"
            r"\s+[A-ZÄÖÜ][\wäöüß\-]+\s+\d{1,4}[a-z]?\b(?=\s*[,;\n]|\s*$|\s+\d{5}\b)",
            # a label, then a value with a number: "Anschrift: ...", "address: ..."
            r"(?i:(?<![\w\-])(?<!ip )(?<!mac )(?<!mail )(?<!host )(?<!web )(?<!base )"
            r"(?:home\s+|postal\s+|mailing\s+|shipping\s+|billing\s+)?(?:address|adresse"
            r"|anschrift|direcci[óo]n|indirizzo|endere[çc]o|adres|domicilio|wohnhaft))\s*[:：]"
            r"[ \t]*[^\n;]{0,60}?\d[^\n;]{0,40}|住所\s*[:：]?\s*\S{2,40}\d\S{0,20}",
            # FR, ES, IT, PT: 12 rue de ..., Calle Mayor 5, Via Roma 10, Rua Augusta 100
            r"\b\d{1,4}(?:\s?(?:bis|ter|[a-z]))?,?\s+(?i:rue|avenue|av\.|boulevard|bd|chemin"
            r"|all[ée]e|impasse|quai|place|cours)(?:\s+[\w'’\-]+){1,4}",
            r"\b(?:Calle|C/|Avenida|Avda\.|Paseo|Plaza|Carrer|Via|Viale|Piazza|Corso|Vicolo"
            r"|Rua|Travessa|Largo|Pra[çc]a)\s+[\w'. ]{2,40}?,?\s+(?:n\.?[º°o]?\s*)?\d{1,4}\b"
            r"(?=\s*[,;\n]|\s*$|\s+\d{4,5}\b)",  # the number ends it: `Via Docker Compose 2 we`
            # US, UK, CA, AU, IN: 1600 Pennsylvania Avenue, 221B Baker Street
            r"\b\d{1,5}[A-Za-z]?\s+(?:[A-Z][\w'\-]*\.?\s+){1,4}(?:Street|St|Avenue|Ave|Road|Rd"
            r"|Lane|Ln|Drive|Dr|Boulevard|Blvd|Way|Court|Ct|Place|Pl|Terrace|Close|Crescent"
            r"|Square|Sq|Highway|Hwy|Parkway|Pkwy|Circle|Gardens|Mews|Row)\b\.?",
            # a postcode before its city: 10115 Berlin, 75002 Paris, 1012 AB Amsterdam
            r"(?<![\w.:/\-#])\d{5}\s+[A-ZÄÖÜÉ][a-zäöüßéèê]{2,}(?:[\s\-][A-ZÄÖÜÉ][a-zäöüßéèê]+)?\b",
            r"(?<![\w.:/\-#])\d{4}\s?[A-Z]{2}\s+[A-Z][a-z]{2,}\b",
            # a US state and ZIP after a city, a UK and a Canadian postcode
            r"\b[A-Z][a-z]+,\s+[A-Z]{2}\s+\d{5}(?:-\d{4})?\b",
            r"\b[A-Z]{1,2}\d[A-Z\d]?\s\d[ABD-HJLNP-UW-Z]{2}\b",
            r"\b[A-Z]\d[A-Z]\s\d[A-Z]\d\b",
            # Japan: 〒100-0001, 1丁目2番3号, 2-3-4 番地
            r"〒\s?\d{3}-?\d{4}|\d+\s?丁目|\d+\s?番地|\d+番\d+号|[都道府県市区町村]\S{0,8}\d+-\d+-\d+",
        ]
    )
)


_RANDOM = "random-looking token"

# -- high-entropy tokens --------------------------------------------------------------------
_LONG_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/=_\-]{20,}")
MIN_TOKEN = 20
# Share of neighbouring characters of different classes (upper, lower, digit, other): about
# 0.6 for a random base62 string, under 0.3 for identifiers, words and paths.
CLASS_CHANGES = 0.34


def _class(char: str) -> int:
    return 0 if char.isupper() else 1 if char.islower() else 2 if char.isdigit() else 3


def _random_looking(piece: str) -> bool:
    if len(piece) < MIN_TOKEN or len(set(piece)) < 10 or _CODE_WORD.fullmatch(piece):
        return False
    if re.fullmatch(r"[0-9a-f\-]+|[0-9A-F\-]+", piece):
        return False  # a hex digest or id in either case
    classes = [_class(c) for c in piece]
    if len(set(classes) - {3}) < 2:
        return False
    changes = sum(a != b for a, b in itertools.pairwise(classes))
    return changes / (len(piece) - 1) >= CLASS_CHANGES


def _base64_text(token: str) -> str | None:
    """The text a base64 run decodes to (None when it is no text)."""
    body = token.rstrip("=")
    if len(body) < MIN_TOKEN or not re.fullmatch(r"[A-Za-z0-9+/]+|[A-Za-z0-9_\-]+", body):
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(c.isprintable() or c in "\n\t\r" for c in decoded)
    return decoded if printable >= 0.95 * len(decoded) else None


def _entropy_token(text: str, depth: int) -> tuple[str, str] | None:
    for match in _LONG_TOKEN.finditer(text):
        token = match.group(0)
        decoded = _base64_text(token)
        if decoded is not None:
            if depth < 1 and (found := _spans(decoded, depth + 1)):
                return found[0][0], token
            if depth < 1:
                continue  # base64 prose: read as the text it is
        if any(_random_looking(p) for p in re.split(r"[/_\-.=+]{1,2}", token)):
            return _RANDOM, token
    return None


def _spans(text: str, depth: int = 0) -> list[tuple[str, str]]:
    forms_kept = blank_public(text)
    blanked = _HEX.sub(" ", forms_kept)
    found = [
        ("long digit run", _digit_runs(blanked)),
        ("number beside its document's name", _named_number(blanked)),
        ("identifier beside a document, credential or person", _named_identifier(blanked)),
        ("credential beside its name", _credential_value(_KEEP.sub(" ", forms_kept))),
        ("pass phrase", _phrase(text)),
        ("coordinates", _coordinates(text)),
        ("birth date", _birth_date(_KEEP.sub(" ", text))),
        ("e-mail address", _email(text)),
        ("street address", (m := _ADDRESS.search(blanked)) and m.group(0)),
    ]
    spans = [(kind, value) for kind, value in found if value]
    entropy = _entropy_token(blanked, depth)
    return [*spans, entropy] if entropy else spans


def _redactable(text: str) -> str | None:
    """One value in `text` whose extent the shapes know exactly: a credential or an id
    beside its name, a birth date, an obfuscated e-mail, an address, a number a word names,
    a base64 run whose text looks private. A bare long number or a random-looking token
    stays the gate's: its extent is sure, whether it is private is not."""
    forms_kept = blank_public(text)
    blanked = _HEX.sub(" ", forms_kept)
    address = _ADDRESS.search(blanked)
    encoded = _entropy_token(blanked, 0)
    found = [
        _phrase(text),
        _credential_value(_KEEP.sub(" ", forms_kept)),
        _named_identifier(blanked),
        _coordinates(text),
        _birth_date(_KEEP.sub(" ", text)),
        _email(text),
        address.group(0) if address else None,
        _named_number(blanked),
        encoded[1] if encoded and encoded[0] != _RANDOM else None,
    ]
    return next((v for v in found if v and v in text and v != REDACTED), None)


MAX_REDACTIONS = 64  # values redacted from one text before the rest is left to the gate


def redact_looks_private(text: str) -> tuple[str, frozenset[str]]:
    """`text` with each value that looks private and has a known extent redacted, and
    those values (for the caller to redact wherever else they stand in the unit); what is
    left, the gate (`residue`) still reads."""
    if not _residue(text):
        return text, frozenset()
    values: set[str] = set()
    for _ in range(MAX_REDACTIONS):
        value = _redactable(text)
        if value is None:
            break
        values.add(value)
        text = text.replace(value, REDACTED)
    return text, frozenset(values)


def residue_spans(text: str) -> list[tuple[str, str]]:
    """Each kind found with the text that showed it: for tuning and tests, never logged."""
    found = _spans(text)
    if "%" in text or "\\" in text:
        for view in decoded_views(text):
            found += _spans(view)
    return found


@lru_cache(maxsize=65_536)  # texts repeat: a follow-up's context, a reply's echo
def _residue(text: str) -> tuple[str, ...]:
    return tuple(sorted({kind for kind, _ in residue_spans(text)}))


def residue(text: str) -> list[str]:
    """The kinds (never the values) of what in `text` still looks private."""
    return list(_residue(text))


def strings_of(value: Any) -> Iterator[str]:
    """Every string of a JSON-like value, its keys included: what is checked one by one (a
    JSON dump would show the rules quoting no text has)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings_of(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings_of(item)
