"""Personal data that is no secret's shape but must not leave a person's own text either.

The scrubber applies these only with `personal=True` (sessions, drafts, issues: a person's own
text); an evaluation's transcripts quote corpus documents whose numbers are answers. Each rule
is (name, pattern, decide) as in `llm.secret_rules`. What a number is, is checked by the
field's own checks where one exists: an IBAN's country format and mod-97 check digits
(python-stdnum), a card's issuer prefix and Luhn digit, the SSA's number ranges, a UK national
insurance number's letters; a card's security code beside its name (CVV, CVC, Prüfnummer,
cryptogramme ...); a VAT or tax id beside its label in several countries' words (NIP, USt-IdNr.,
TVA, P.IVA, NIF, BTW, Vergi No), unless a company's legal form stands before it on its line
(a company's VAT id is public by design); an identity document's number or a date of birth
after its name; phone numbers by libphonenumber (`llm.detectors.personal_in`, on the candidates
`PHONE_CANDIDATE` finds). E-mail addresses (`EMAIL`) are the sessions' and drafts' to
replace with a stable fixture.

Home folders are the one home of their forms (`HOME_FOLDER`): `/home/<user>`, `/Users/<user>`,
`/var/home/<user>` (Fedora Silverblue), `/export/home/<user>`, `/mnt/c/Users/<user>` (WSL),
`C:\\Users\\<user>` and `C:/Users/<user>`, `\\\\wsl$\\<distro>\\home\\<user>`, `/root` and
`~<user>/`. Each becomes `~`; `home_user` gives the name a match revealed, for callers that
replace it elsewhere too.
"""

from __future__ import annotations

import re

from agenteval.llm.addresses import HINT as ADDRESS_HINT
from agenteval.llm.addresses import address_rules
from agenteval.llm.public_ids import TEST_CARDS
from agenteval.llm.secret_rules import REDACTED, Rule

_NAME = r"[\w.@+\-]+"
HOME_FOLDER = re.compile(
    # (?=...) first: every form starts with a separator, `~` or a drive, so the scan skips
    # every other position at once (a third of the time on the sessions benchmark's text)
    r"(?=[/\\~]|[A-Za-z]:[/\\])(?<![\w.~\-])(?:"
    # POSIX folders as their systems spell them (`/api/users/42` is a route, not a home);
    # Windows' and WSL's whatever the case, as Windows reads them (`c:\\users\\bob`)
    r"(?:(?:/var|/export|/usr)?/+(?:home|Users)"
    r"|(?:/mnt/[A-Za-z]|[A-Za-z]:)[/\\]+(?i:users|documents and settings|home)"
    r"|\\+(?:home|Users|Documents and Settings))"
    r"[/\\]+"
    rf"(?P<user>{_NAME})"
    rf"|\\+(?i:wsl)(?:\$|\.localhost)\\+[^\\/\s]+\\+(?i:home)\\+(?P<wsl>{_NAME})"
    r"|/root(?=[/\\]|\b)"
    r"|~(?P<tilde>[A-Za-z_][\w.\-]*)(?=/)"
    r")(?=[/\\]|\b)"
)
# An e-mail address (sessions and drafts put a stable fixture in its place, FIXTURE_EMAIL).
EMAIL = re.compile(
    r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?)*\.[A-Za-z][A-Za-z\-]*[A-Za-z](?![\w\-])"
)  # a top-level domain has letters only: `lodash@4.17.21` is a package's version
FIXTURE_EMAIL = re.compile(r"person\d+@example\.com")
# The domains reserved for documentation (RFC 2606): an address there is nobody's. (The
# `.example` and `.test` top-level names stand in for real ones in tests: replaced.)
RESERVED_EMAIL = re.compile(r"@(?:[\w\-]+\.)*example\.(?:com|org|net)$", re.IGNORECASE)
# Account names too common to replace as words wherever they appear.
GENERIC_USERS = frozenset(
    {"root", "user", "users", "admin", "runner", "ubuntu", "shared", "public", "default"}
)
HOME_HINT = re.compile(
    r"home|Users|(?i:[a-z]:[/\\]+users|/mnt/[a-z]/users|wsl|documents and)|root|~[A-Za-z_]"
)


def home_user(match: re.Match[str]) -> str | None:
    """The account name a HOME_FOLDER match revealed (None for /root)."""
    return match.group("user") or match.group("wsl") or match.group("tilde")


def _home(_: re.Match[str]) -> str:
    return "~"


SSN = re.compile(r"(?<![\w\-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w\-])")
# 13 to 19 digits in any grouping (spaces, dashes, dots; not a version's `1.2.3`).
CARD = re.compile(r"(?<![\w\-.])\d(?:[ \-.]?\d){12,18}(?![\w\-]|\.\d)")
# A number its sentence calls a card's is one whatever its check digit (a typo, a test
# card): the issuer or the word within a few words before it, an expiry or CVV after it.
_CARD_BEFORE = re.compile(
    r"(?i:card|visa|master\s?card|amex|american\s+express|discover|diners|jcb|maestro"
    r"|unionpay|karte|carte|tarjeta|cart[aã]o|carta|\bcc\b|\bpan\b)\W+(?:\w+\W+){0,3}$"
)
_PRINTED_CARD = re.compile(
    r"\d{4}([ \-.])\d{4}\1\d{4}\1\d{4}(?:\1\d{1,3})?|\d{4}([ \-])\d{6}\2\d{4,5}"
)
_CARD_AFTER = re.compile(r"^\W{0,3}(?i:exp|expir|valid|cvv|cvc|csc|ablauf|gültig)")
# Issuers' prefixes by length (Visa, Mastercard, Amex, Discover, JCB, Diners): a run of
# digits that passes Luhn by chance (an epoch in milliseconds) mostly starts otherwise.
_CARD_PREFIX = re.compile(
    r"4\d{12}(?:\d{3}){0,2}|(?:5[1-5]|2[2-7])\d{14}|3[47]\d{13}|6(?:011|5\d\d)\d{12}(?:\d{3})?"
    r"|35\d{14}|3(?:0[0-5]|[68]\d)\d{11}"
)
# Country, check digits, then the account in groups of four (spaced or not); or pasted in
# lower case, compact (spaced, a lower-case group could be the next word).
IBAN = re.compile(
    r"\b(?:[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?|[a-z]{2}\d{2}[a-z0-9]{11,30})\b"
)
# A UK national insurance number: two letters (not the pairs HMRC never issues), six
# digits, a letter A-D; compact or in its printed pairs.
NINO = re.compile(
    r"\b(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-Z](?: \d{2} \d{2} \d{2} |\d{6})[A-D]\b"
)
# A number after the name of a personal identity document or register.
NAMED_ID = re.compile(
    r"(?i:\b(?:passport|national[ \-]insurance|social[ \-]security|driver'?s?[ \-]licen[cs]e"
    r"|licen[cs]e[ \-]number|tax[ \-](?:id|identification|number|code)|identity[ \-]card"
    r"|national[ \-]id|id[ \-]card|personnummer|aadhaar|codice[ \-]fiscale|steuer-?id"
    r"|medicare|health[ \-]card|nhs|date[ \-]of[ \-]birth|birth[ \-]?date|born[ \-]on"
    # other countries' registers: Canada's social insurance, India's UIDAI, the Dutch
    # burgerservicenummer / sofinummer, France's sécurité sociale, Ireland's PPS
    r"|social[ \-]insurance|uidai|burgerservice(?:nummer)?|sofi[ \-]?nummer"
    r"|s[ée]curit[ée][ \-]sociale|personal[ \-]public[ \-]service))"
    r"|\b(?:NINO|NI|SSN|SIN|TIN|PAN|BSN|DNI|NIE|NIF|CPF|PESEL|DOB|NIR|NRIC|CURP|PPSN|AHV|RUT)\b"
)
_NAMED_VALUE = re.compile(
    r"[ \t]*(?:(?i:number|no\.?|num\.?|nr\.?|#))?[ \t]*(?:(?i:is|was)\b|[:=#\-])?[ \t]*"
    r"[\"'`]?(?P<value>[A-Z0-9](?:[A-Z0-9]|[ \-./](?=[A-Z0-9])){4,20})"
)
# A card's security code beside its name, whether or not the card number is still there.
CARD_CODE = re.compile(
    r"(?i:\b(?:cvv2?|cvc2?|csc|cvn|security[ \t]+code|card[ \t]+(?:verification|security)"
    r"[ \t]+(?:code|value|number)|(?:karten)?prüfnummer|cryptogramme(?:[ \t]+visuel)?"
    r"|c[oó]digo[ \t]+de[ \t]+seguran?[çc]a|c[oó]digo[ \t]+de[ \t]+seguridad"
    r"|codice[ \t]+di[ \t]+sicurezza|güvenlik[ \t]+kodu|kod[ \t]+cvv)\b)"
    r"[ \t]*(?:[:=#\-][ \t]*|(?i:is|ist|est|es|é)[ \t]+)?[\"'`]?(?P<value>\d{3,4})(?![\w.,]\d)"
)
# A VAT or tax id beside its label (NIP, USt-IdNr., TVA, P.IVA, NIF, BTW, VKN, ...): a sole
# trader's is a person's. One beside a company's legal form (`Acme Sp. z o.o., NIP firmy
# PL...`, `GmbH, USt-IdNr. DE...`) is public by design (VIES lists it) and stays.
TAX_ID = re.compile(
    r"(?:\b(?:NIP|REGON|USt-?Id(?:Nr)?\.?|UID(?:-Nr)?\.?|Steuer-?Nr\.?|TVA(?:[ \t]+intracom\w*)?"
    r"|P\.?[ \t]?IVA|Partita[ \t]+IVA|NIF|CIF|BTW(?:-id|-nummer|-nr\.?)?|VKN|Vergi[ \t]+No\.?"
    r"|(?i:vat(?:[ \t]+(?:id|no\.?|number|reg(?:istration)?(?:[ \t]+(?:no\.?|number))?))?"
    r"|tax[ \t]+(?:id|no\.?|number)|ein)))"
    r"(?:[ \t]+[a-zżółćęśąźń]{3,8})?[ \t]*(?:[:#=][ \t]*)?"
    r"(?P<value>(?=(?:[A-Z ]*[0-9][ \-./]?){8})[A-Z]{0,3}[ \t]?[0-9][0-9A-Z \-./]{6,16}[0-9A-Z])\b"
)
_LEGAL_FORM = re.compile(
    r"(?:Sp\.[ \t]?z[ \t]?o\.[ \t]?o\.|S\.A\.|\bGmbH\b|\bAG\b|\bLtd\b|\bLLC\b|\bInc\b|\bPLC\b"
    r"|\bS\.?[AaLl]\.?[Rr]\.?[Ll]\.?|\bSAS\b|S\.r\.l\.|S\.p\.A\.|B\.V\.|N\.V\.|A\.Ş\.|\bS\.L\.|\bKG\b"
    r"|\bfirmy\b|(?i:\bcompany'?s?\b|\bunternehmen|\bsoci[ée]t[ée]|\bempresa\b|\bazienda\b))"
)
# A necessary condition for any number rule here (and for a phone number) to match;
# HOME_HINT is the home folders' own.
PERSONAL_PREFILTER = re.compile(
    r"\d[\d\s()./\-]{5,}\d|[A-Z]{2}\d{6}[A-D]|(?i:cvv|cvc|csc|code|kodu|prüfnummer|crypto)|"
    + ADDRESS_HINT
)
# `mobile:+61 ...` but not `14:22:05`: a colon may come before a number with its country code.
PHONE_CANDIDATE = re.compile(
    r"(?:(?<=:)(?=\+)|(?<![\w.+\-/:#=@$]))"
    r"(?:\+\d{1,3}[ .\-]?)?(?:\(\d{1,5}\)[ .\-]?)?"
    r"\d{1,8}(?:[ .\-]\d{1,8}){0,5}(?![\w\-/:])"
)


def _card(match: re.Match[str]) -> str | None:
    number = re.sub(r"[ \-.]", "", match.group(0))
    if number in TEST_CARDS:
        return None  # a payment provider's published test card
    digits = [int(c) for c in number]
    if len(set(digits)) < 2:
        return None
    text, start, end = match.string, match.start(), match.end()
    if _CARD_BEFORE.search(text[max(0, start - 60) : start]) or _CARD_AFTER.search(
        text[end : end + 12]
    ):
        return REDACTED
    if not _CARD_PREFIX.fullmatch(number):
        return None
    if _PRINTED_CARD.fullmatch(match.group(0)):
        return REDACTED  # an issuer's number printed as cards print it: a typo is still one
    total = 0
    for i, d in enumerate(reversed(digits)):  # Luhn
        total += d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2)
    return REDACTED if total % 10 == 0 else None


def _iban(match: re.Match[str]) -> str | None:
    from stdnum import iban

    return REDACTED if iban.is_valid(match.group(0)) else None


def _whole(_: re.Match[str]) -> str:
    return REDACTED


def _named_value(match: re.Match[str]) -> str | None:
    """`passport number is 548190372`: a value of at least five digits after the name."""
    value = match.group("value").rstrip(" -.")
    if sum(c.isdigit() for c in value) < 5:
        return None
    start = match.start("value") - match.start()
    return match.group(0)[:start] + REDACTED + match.group(0)[start + len(value) :]


def _card_code(match: re.Match[str]) -> str:
    start = match.start("value") - match.start()
    return match.group(0)[:start] + REDACTED + match.group(0)[start + len(match.group("value")) :]


def _tax_id(match: re.Match[str]) -> str | None:
    line_start = match.string.rfind("\n", 0, match.start()) + 1
    if _LEGAL_FORM.search(match.string, max(line_start, match.start() - 80), match.start()):
        return None  # a company's: public
    return _card_code(match)


# A phone number a link carries, with or without its +: wa.me/4917..., t.me/+4917...,
# tel:+49..., sms:, callto:, WhatsApp's and Viber's `phone=`/`number=`.
PHONE_LINK = re.compile(
    r"(?i:\bwa\.me/|\bt\.me/\+|\b(?:tel|sms|callto|facetime|skype):(?://)?"
    r"|[?&](?:phone|number)=)(?P<value>(?:\+|%2B)?\d[\d\-.()]{5,20}\d)(?![\w])"
)


def _phone_link(match: re.Match[str]) -> str:
    start = match.start("value") - match.start()
    return match.group(0)[:start] + REDACTED


def home_rules() -> list[Rule]:
    return [("home_folder", HOME_FOLDER, _home)]


def personal_rules() -> list[Rule]:
    """The personal numbers' rules (phone numbers are `llm.detectors.personal_in`'s)."""
    return [
        ("phone_link", PHONE_LINK, _phone_link),
        ("ssn", SSN, _whole),
        ("card_number", CARD, _card),
        ("card_code", CARD_CODE, _card_code),
        ("tax_id", TAX_ID, _tax_id),
        ("iban", IBAN, _iban),
        ("national_insurance", NINO, _whole),
        *address_rules(),
        ("named_id", re.compile(f"(?:{NAMED_ID.pattern}){_NAMED_VALUE.pattern}"), _named_value),
    ]
