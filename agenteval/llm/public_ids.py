"""What the residue gate (`llm.residue`) lets pass: public identifiers and numbers that only
look like private data.

A transcript is full of numbers and tokens nobody owns: references to published things
(DOIs, ISBN/ISSN, arXiv and PubMed ids, RFCs, CVEs), names of software states (versions,
commit SHAs, content hashes, cache keys, build, request and trace ids, UUIDs, ULIDs, KSUIDs,
Snowflake ids), times in many formats, documentation IP addresses, ports, line, issue and PR
numbers, amounts of money and measurements. A parcel's tracking number is public too: it is
the carrier's reference for a package, printed on its label and typed into the carrier's
public page, which shows places and times, never whose it is; it names no person.

`blank_public(text)` blanks every such span before the gate looks for private shapes, so a
case full of them is not dropped; `safe_number` says whether a digit run the gate found is a
known-safe number. A span is only blanked where its own shape or the word beside it says
which public thing it is (a tracking number beside "tracking", a hex id beside "cache key").
"""

from __future__ import annotations

import re

from agenteval.llm.demo_tokens import demo_spans

# Names that make the value right after them a public id or digest, not a credential:
# "cache key", "request id", "content hash", "pagination token" (never "api key",
# "session token", "access key": those are no qualifier here).
# A PEM block's label that says nothing private: a certificate, its request or revocation
# list, a public key of any algorithm, PKCS#7, parameters, a signature, a PGP public block or
# message. Labels with PRIVATE, SECRET or ENCRYPTED (`OPENSSH PRIVATE KEY`, `PGP PRIVATE KEY
# BLOCK`, `ENCRYPTED PRIVATE KEY`) are keys: never set aside.
PUBLIC_PEM_LABEL = r"(?!(?:[A-Z0-9]+ )*(?:PRIVATE|SECRET|ENCRYPTED)\b)[A-Z0-9]+(?: [A-Z0-9]+)*"
# A PEM body: base64 lines (padding only at a line's end), a PGP checksum line `=abcd`, each
# ended by a newline or a JSON string's `\n`. Nothing else: a `password=…` line inside a
# block that says CERTIFICATE is no body, so the block is not set aside.
PEM_BODY = r"\s*(?:(?:[A-Za-z0-9+/]+={0,2}|=[A-Za-z0-9+/]{4})(?:\s+|\\n))*"
_ID_QUALIFIER = (
    r"cache|content|object|blob|build|request|req|trace|span|parent|correlation|idempotency"
    r"|dedup(?:lication)?|partition|sort|primary|foreign|lookup|index|row|etag|layer|manifest"
    r"|image|commit|lfs|checksum|integrity|run|job|message|msg|event|deployment|release"
    r"|revision|ray|file|asset|chunk|cluster|instance|container|pod|transaction|txn|order"
    r"|invoice|tracking|shipment|snapshot|volume|workflow|artifact|pipeline|task|execution"
    r"|operation|sequence|channel|guild|tweet|status|thread|comment|post|video|playlist"
    r"|product|sku|item|batch|bucket|query|version|upload|download|cloudfront|lambda|execution"
)
# Names whose value is an id whatever its shape (a request id is nobody's secret); a key,
# hash or digest must have a digest's shape as well (see `public_shape`).
# Names whose value is public whatever its shape: an id, a public key (base64 of any length).
_ANY_SHAPE = re.compile(
    r"(?i:(?:ids?|ray|ksuid|ulid|uuid|guid|snowflake|(?:public|pub)[\s_\-.]?keys?)\W*$|^x-|^cf-"
    r"|^content-md5$)"
)
PUBLIC_NAME = re.compile(
    rf"(?i:\b(?:{_ID_QUALIFIER})[\s_\-.]?(?:id|ids|hash|digest|sha|sum|checksum|fingerprint"
    r"|etag)s?\b"
    r"|\b(?:cache|content|object|partition|sort|primary|foreign|lookup|index|row|idempotency"
    r"|dedup|s3|storage\s+object)[\s_\-.]?keys?\b"
    r"|\b(?:page|pagination|continuation|next|sync|cursor|idempotency)[\s_\-]?tokens?\b"
    r"|\bcontent-md5\b"
    r"|\bx-(?:request|correlation|trace|amzn-trace|cache|b3-trace|b3-span|amz-cf-id"
    r"|amz-request-id|amz-id-2|goog-request|github-request|runtime)[\w\-]*|\bcf-ray"
    r"|\b(?:ksuid|ulid|uuid|guid|snowflake)s?\b"
    # a public key's fingerprint or id: "key fingerprint", "GPG key", "signing key (public)"
    r"|\b(?:key[\s_\-])?fingerprints?\b|\b(?:gpg|pgp|openpgp)[\s_\-]?(?:key|id)s?\b"
    r"|\bkeys?\s+\(public\)"
    # a key its name says is the public half: `publicKey`, `public_key`, `PUB_KEY`
    r"|\b(?:public|pub)[\s_\-.]?keys?\b)"
)
# A public id or digest after the name saying so: "cache key: 9f86...", "request id
# req_8XkE...", "x-amzn-trace-id: Root=1-...": blanked when its shape is an id's or a digest's.
_NAMED_VALUE = re.compile(
    rf"(?:{PUBLIC_NAME.pattern})(?:\s+\(?[\w\-]{{2,12}}\)?)?[\"'\s:=]{{1,4}}(?P<value>(?:[A-Za-z]+[:=])?[A-Za-z0-9_\-+/=.]{{6,100}})"
)
_ID_SHAPE = re.compile(
    r"[0-9a-fA-F]{7,128}|\d{6,20}|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"
    r"|[0-7][0-9A-HJKMNP-TV-Z]{25}|[0-9A-Za-z]{27}"  # ULID, KSUID
    r"|(?!(?:sk|rk|pk|whsec|rt|at)_)[a-z]{2,8}_[A-Za-z0-9]{8,40}"  # Stripe-style object ids
    r"|[A-Za-z][\w.\-]{0,60}-[0-9a-f]{32,128}"  # a cache key: a named prefix, then a digest
    r"|(?:Root=)?\d-[0-9a-f]{8}-[0-9a-f]{24}(?:;[\w=\-;]+)?"  # an AWS X-Ray trace id
    r"|(?:sha\d{1,3}[:\-]|md5:)?[A-Za-z0-9+/_\-]+={0,2}"  # a digest, checked by length below
)
# Lengths of an MD5, SHA-1, SHA-256, SHA-384 and SHA-512 digest in base64 (padded or not).
_DIGEST_B64 = {22, 24, 27, 28, 43, 44, 64, 86, 88}


def public_shape(value: str) -> bool:
    """Whether `value` has the shape of an id or a digest (not of a generated key)."""
    value = value.rstrip(".,;")
    if not _ID_SHAPE.fullmatch(value):
        return False
    if re.fullmatch(r"[\w:\-]*[A-Za-z0-9+/_\-]+={0,2}", value) and not re.fullmatch(
        r"[0-9a-fA-F\-]+|\d+|[0-7][0-9A-HJKMNP-TV-Z]{25}|[0-9A-Za-z]{27}|[a-z]{2,8}_\w+|(?:Root=)?\d-.*"
        r"|[A-Za-z][\w.\-]{0,60}-[0-9a-f]{32,128}",
        value,
    ):
        body = re.sub(r"^(?:sha\d{1,3}[:\-]|md5:)", "", value)
        return len(body) in _DIGEST_B64
    return True


def _public_value(match: re.Match[str]) -> bool:
    name = match.group(0)[: match.start("value") - match.start()].strip(" \t\"':=")
    return public_shape(match.group("value")) or bool(_ANY_SHAPE.search(name))


def _named_public(match: re.Match[str]) -> str:
    value, whole = match.group("value"), match.group(0)
    return whole.replace(value, " " * len(value)) if _public_value(match) else whole


# A carrier's name and/or a tracking word, then the number: "UPS tracking number 1Z...",
# "FedEx: 7712 3456 7890", "Sendungsnummer 00340434161094042557".
_CARRIER = (
    r"(?i:(?:\b(?:fedex|usps|dhl|ups|royal\s+mail|parcelforce|colissimo|gls|dpd|hermes|ontrac"
    r"|canada\s+post|la\s+poste|correos|postnl|evri|yodel)\b[\s:#=\-]{0,3})?"
    r"(?:tracking|track\s+(?:and|&)\s+trace|waybill|awb|consignment|sendungs|suivi|seguimiento"
    r"|\b(?:fedex|usps|dhl|ups|postnl|dpd|gls)\b)"
    r"(?:[\s\-]?(?:number|no\.?|nr\.?|code|id|#|nummer|num[ée]ro|n[úu]mero))?[\s:#=\-]{0,4})"
)
# Units a number is measured in (no unit that is also a short English word: "in", "m"; no
# currency: `account 12345678 EUR` is an account's number, money has its own form below).
_UNITS = (
    r"(?i:bytes?|[kmgtp]i?b(?:/s)?|b/s|bps|ms|us|µs|ns|s|sec|secs|seconds?|mins?|minutes?"
    r"|hrs?|hours?|tokens?|rows?|lines?|records?|items?|files?|requests?|req/s|rps"
    r"|qps|ops(?:/s)?|events?|steps?|%|px|dpi|x|hz|khz|mhz|ghz|mm|cm|km"
    r"|kg|mg|lbs?|ml|°c|°f|kwh|wh|kw|mw|mah|ppm|sats|gwei|wei)(?![A-Za-z])"
)

# -- known-safe spans, blanked before any shape is looked for -------------------------------
SAFE_FORMS = re.compile(
    "|".join(
        [
            r"\[REDACTED\]",
            # dates and times: 2026-12-07T10:00:00.123+01:00, 07.12.2026, 12/07/2026, 10:00:00,
            # 20261207T101500Z, [07/Dec/2026:10:15:00 +0000], Mon, 07 Dec 2026 10:15:00 GMT
            r"\b\d{4}-\d{2}-\d{2}"
            r"(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+\-]\d{2}:?\d{2})?)?",
            r"\b\d{4}/\d{1,2}/\d{1,2}\b|\b\d{1,2}[./]\d{1,2}[./]\d{4}\b",
            r"\b\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?\b",
            # (not a personnummer's 19740205-6163)
            r"\b(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])"
            r"(?:[T_\-]?[0-2]\d[0-5]\d(?:[0-5]\d)?(?:[.,]\d{1,9})?Z?)?\b(?![\-+]\d)",
            r"\b\d{1,2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2}(?:\s[+\-]\d{4})?",
            r"\b\d{1,2}\s[A-Z][a-z]{2}\s\d{4}\s\d{2}:\d{2}:\d{2}(?:\s(?:[+\-]\d{4}|[A-Z]{2,4}))?",
            # UUIDs, ULIDs, hex digests and ids (git SHAs, ObjectIds, container ids)
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
            r"\b[0-7][0-9A-HJKMNP-TV-Z]{25}\b",
            r"\b0x[0-9a-fA-F]+\b",
            # a content-addressed store's names: a Nix store path's hash (Nix's base32), a
            # remote cache's digest and size (Bazel, the remote execution API: <sha256>/<bytes>)
            r"/nix/store/[0-9a-df-np-sv-z]{32}-",
            r"\b[0-9a-f]{64}/\d{1,15}\b",
            # public keys, certificates, base64 images, integrity hashes
            r"(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com)"
            r"\s+AAAA[A-Za-z0-9+/=]+",
            r"-----BEGIN " + PUBLIC_PEM_LABEL + r"-----" + PEM_BODY + r"-----END [A-Z0-9 ]+-----",
            r"data:[\w/+.\-]+;base64,[A-Za-z0-9+/=\s]+",
            r"(?:iVBORw0KGgo|/9j/|R0lGOD|UklGR)[A-Za-z0-9+/=]{16,}",
            # keys public by design: Stripe's publishable keys (pk_live_..., pk_test_...)
            r"\bpk_(?:live|test)_[A-Za-z0-9]{16,}",
            r"\b(?:sha(?:1|256|384|512)[-:]|h1:|SHA256:|md5:)[A-Za-z0-9+/=_\-]+",
            # an ARN's account, an ETag, a model id's date
            r"\barn:aws[\w\-]*:\S+",
            r"(?i:etag)[\"':\s]*(?:W/)?\"[^\"\s]{1,80}\"|\bW/\"[^\"\s]{1,80}\"",
            # IPv4 (with a port), IPv6 (2001:db8::1, fe80::1%eth0)
            r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?::\d+)?\b",
            r"(?<![\w:])(?=[0-9a-fA-F:]*::|(?:[0-9a-fA-F]{1,4}:){7})[0-9a-fA-F:]{3,39}(?:%\w+)?"
            r"(?![\w:])",
            # published works: DOI, ISBN, ISSN, arXiv, PubMed, RFC; advisories: CVE, GHSA
            r"\b10\.\d{4,9}/[\w.;()/:\-]+",
            r"(?i:\bISBN(?:-1[03])?[\s:=#{\"']*)[\dX][\d\- X]{8,16}[\dX]\b"
            r"|(?i:\b(?:EAN|GTIN|UPC|barcode)(?:-?1[234])?[\s:=#]*)\d{8,14}\b"
            r"|\b97[89][- ]\d{1,5}[- ]\d{1,7}[- ]\d{1,7}[- ][\dX]\b",
            r"(?i:\be?ISSN:?\s*)\d{4}-?\d{3}[\dX]\b",
            r"(?i:\barxiv[:/\s]*(?:abs/|pdf/)?)\d{4}\.\d{4,5}(?:v\d+)?|\b\d{4}\.\d{4,5}v\d+\b",
            r"(?i:\b(?:PMID|PubMed(?:\s+ID)?|PMCID)[:\s#]*)(?:PMC)?\d{1,9}\b|\bPMC\d{5,9}\b",
            r"(?i:\b(?:RFC|BCP|STD)[\s\-]?\d{1,5}\b)",
            r"\bCVE-\d{4}-\d{4,7}\b|\bGHSA(?:-[23456789cfghjmpqrvwx]{4}){3}\b",
            # versions with a pre-release or build part: v3.12.0-beta.2, pkg@2.14.0-rc.3+b7
            r"(?:@|\bv)\d+\.\d+\.\d+(?:[\-+][0-9A-Za-z.\-+]+)?\b"
            r"|\b(?:0|[1-9]\d{0,3})\.(?:0|[1-9]\d{0,3})\.(?:0|[1-9]\d{0,3})[\-+][0-9A-Za-z.\-+]+",
            # ticket, issue and PR references: SHOP-8017, GH-1234, #4821, !312
            r"\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b|(?<![\w&])[#!]\d{1,7}\b",
            # a parcel: UPS 1Z..., and digits or letters right after a carrier's word
            r"\b1Z[0-9A-Z]{16}\b|"
            + _CARRIER
            + r"[A-Z]{2}\d{9}[A-Z]{2}\b",  # UPU S10: RR123456785GB
            # an LLM API's object ids, typed by their prefix: msg_01..., toolu_01...,
            # req_..., chatcmpl-... (what a call returned, not what authorises one)
            r"\b(?:msg|toolu|srvtoolu|msgbatch|compl|req|resp|chatcmpl|call|asst|thread|run"
            r"|batch)[_\-][A-Za-z0-9]{16,40}\b",
            # a payment API's object ids, typed by their prefix: pi_3Pqr..., ch_..., cus_...
            # (not a PaymentIntent's client secret `pi_..._secret_...`: `\b` fails before `_`)
            r"\b(?:pi|ch|cus|in|py|pm|seti|evt|txn|re|sub|prod|price|src|card|ba|acct|po|tr"
            r"|ii|il|si|plink|promo|payout|file|cs_(?:live|test))_[A-Za-z0-9]{14,40}\b",
            # a process's id in a log line: sshd[2983117]
            r"(?<=[a-z\-_])\[\d{1,10}\]",
            _CARRIER + r"[A-Z]{0,4}\d[\d ]{8,34}\d[A-Z]{0,2}\b",
            # money: $1,234,567.89, €12.500,00, 1 234 567 EUR
            # (an ungrouped run of more than six digits is no amount: an account's number)
            r"[$€£¥₹]\s?(?:\d{1,3}(?:[,.' ]\d{3})+|\d{1,6})(?:[.,]\d{1,2})?(?![\d,.])"
            r"|\b(?:\d{1,3}(?:[,.' ]\d{3})+|\d{1,6})(?:[.,]\d{1,2})?\s?"
            r"(?i:usd|eur|gbp|jpy|chf|€|\$|£)"
            r"(?!\w)",
            # a measurement: 1,048,576 bytes, 12 345 ms, 3.2 GHz
            r"\b(?:\d{1,3}(?:[,. ]\d{3})+|\d+)(?:[.,]\d+)?\s?" + _UNITS,
        ]
    )
)


# Values public by design even after a secret's name (`SSH_HOST_KEY_PUB=ssh-ed25519 AAAA...`,
# `STRIPE_PUBLISHABLE_KEY=pk_live_...`, `LOCKFILE_INTEGRITY=sha512-...`). A UUID or a hex
# digest is none here: after a secret's name it may be the key (Heroku's are UUIDs).
PUBLIC_BY_DESIGN = re.compile(
    r"(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com)"
    r"\s+AAAA[A-Za-z0-9+/=]+"
    r"|-----BEGIN " + PUBLIC_PEM_LABEL + r"-----"
    r"|\bpk_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|\b(?:sha(?:256|384|512)-|h1:)[A-Za-z0-9+/=]{20,}"
    r"|data:[\w/+.\-]+;base64,"
)


def public_at(text: str, at: int) -> bool:
    """Whether a value starting at `at` of `text` is public by design (a public key, a
    publishable key, an integrity hash), whatever name it stands after."""
    return PUBLIC_BY_DESIGN.match(text, at) is not None


def blank_public(text: str) -> str:
    """`text` with every known-public span blanked, its length kept."""
    for start, end in demo_spans(text):
        text = text[:start] + " " * (end - start) + text[end:]
    return _NAMED_VALUE.sub(_named_public, SAFE_FORMS.sub(_blank, text))


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))  # offsets kept: a detector's finding is looked up by them


def named_public(text: str, at: int) -> bool:
    """Whether the value at `at` in `text` is a public id or digest its name says it is
    ("cache key: <43 base64url>"), so no rule reads it as a credential."""
    for match in _NAMED_VALUE.finditer(text, max(0, at - 48)):
        if match.start("value") <= at < match.end("value"):
            return _public_value(match)
    return False


def public_named(before: str) -> str:
    """`before` (the text ahead of a value) without the names that make a value public:
    'the cache key' is no credential's name."""
    return PUBLIC_NAME.sub(" ", before)


# -- digit runs the gate leaves: versions, decimals, epochs, numbers a word names -----------
VERSION = re.compile(r"v?(?:0|[1-9]\d*)(?:\.(?:0|[1-9]\d*)){1,3}")
DECIMAL = re.compile(r"-?\d+\.\d+")
_ROUND = re.compile(r"[1-9]\d{0,2}0{4,}")
_UNIT_AFTER = re.compile(r"\s?" + _UNITS)
# A number its word says is no person's: a commit, a build, an order, a process, a line.
NUMBER_NAME = re.compile(
    r"(?i:commit|rev(?:ision)?|sha|build|run|job|pipeline|pr|issue|ticket|order|pid|port|line"
    r"|row|offset|size|seed|step|epoch|version|release|isbn|issn|pmid|doi|rfc|cve|arxiv"
    r"|snowflake|resourceversion|generation|sequence|seq|nonce|xid|txid|lsn|gen|#"
    # a company's register entry is public: KRS, REGON, HRB, SIREN/SIRET, KvK, CNPJ, CRN
    r"|krs|regon|hr[ab]|siren|siret|kvk|cnpj|crn|company\s+(?:no|number|reg\w*))"
    r"\W{0,3}(?:\w+\W{1,3})?$"
)
_TIMESTAMP_KEY = re.compile(r"(?i:time|stamp|date|created|updated|_at\b|epoch|ts\b|clock)")
# Snowflake ids (Twitter/X, Discord): a 64-bit number whose top 42 bits are milliseconds
# since the service's epoch; beside an id word, a time between 2010 and 2035 says it is one.
_SNOWFLAKE_EPOCHS_MS = (1_288_834_974_657, 1_420_070_400_000)
_SNOWFLAKE_SPAN_MS = (1_262_304_000_000, 2_051_222_400_000)
_ID_WORD = re.compile(r"(?i:\bids?\b|_id\b|Id\b|snowflake|message|channel|guild|tweet|status)")
_EPOCH_DIGITS = {10: 1, 13: 1_000, 16: 1_000_000, 19: 1_000_000_000}


def _power_of_two_ish(number: int) -> bool:
    """2^n or 2^n - 1 past a million: a size, a limit, a mask or a Mersenne prime (8589934592
    bytes, 2305843009213693951), a number of arithmetic, not of a person."""
    return number >= 1 << 20 and (number & (number - 1) == 0 or number & (number + 1) == 0)


def _epoch(run: str) -> bool:
    """An epoch in seconds, milliseconds, microseconds or nanoseconds (2001-2039)."""
    scale = _EPOCH_DIGITS.get(len(run)) if run.isdigit() else None
    return scale is not None and 1_000_000_000 <= int(run) // scale <= 2_200_000_000


def _snowflake(run: str, before: str) -> bool:
    if not (run.isdigit() and 17 <= len(run) <= 19 and _ID_WORD.search(before)):
        return False
    low, high = _SNOWFLAKE_SPAN_MS
    return any(low <= (int(run) >> 22) + epoch <= high for epoch in _SNOWFLAKE_EPOCHS_MS)


# Card numbers the card networks' and payment providers' documentation publishes for tests
# (Stripe, Adyen, Braintree): any amount charged to them is fiction.
TEST_CARDS = frozenset(
    {
        "4242424242424242",
        "4000056655665556",
        "5555555555554444",
        "2223003122003222",
        "5200828282828210",
        "5105105105105100",
        "378282246310005",
        "371449635398431",
        "6011111111111117",
        "6011000990139424",
        "3056930009020004",
        "36227206271667",
        "3566002020360505",
        "6200000000000005",
        "4111111111111111",
        "4012888888881881",
        "4000000000000002",
        "4000000000009995",
        "4000002500003155",
        "4000000000003220",
    }
)
# Telephone numbers set aside for fiction and documentation: the US 555-0100 to 0199, the
# UK's Ofcom drama range 07700 900000 to 900999, Australia's ACMA 0491 570 ... and 5550 ....
FICTIONAL_PHONE = re.compile(
    r"(?:(?:\+?1[ .\-]?)?\(?\d{3}\)?[ .\-]?)?555[ .\-]?01\d\d"
    r"|(?:\+44[ ]?|0)7700[ ]?900[ ]?\d{3}"
    r"|(?:\+61[ ]?|0)4?91[ ]?57[0-2][ ]?\d{3}|(?:\+61[ ]?|0)\(?[2378]\)?[ ]?5550[ ]?\d{4}"
)


def fictional_number(raw: str) -> bool:
    """A published test card or a number set aside for fiction (see above)."""
    return re.sub(r"[ \-.]", "", raw) in TEST_CARDS or FICTIONAL_PHONE.fullmatch(raw) is not None


_BUSINESS_REGIONS = ("US", "GB", "PL", "DE", "FR", "ES", "IT", "NL", "AU", "IN", "TR", "BR")


def business_line(raw: str, region: str | None = None) -> bool:
    """A toll-free, premium-rate, shared-cost or universal access number (as `region`, or
    any of several countries, writes it) is a business's line printed on its website
    (`infolinia 800 123 456`, `+1 800 555 0199`), no person's."""
    import phonenumbers
    from phonenumbers import PhoneNumberType as Kind

    business = (Kind.TOLL_FREE, Kind.PREMIUM_RATE, Kind.SHARED_COST, Kind.UAN)
    regions = (region,) if region else ((None,) if raw.startswith("+") else _BUSINESS_REGIONS)
    for each in regions:
        try:
            number = phonenumbers.parse(raw, each)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number) and phonenumbers.number_type(number) in business:
            return True
    return False


def _argument(text: str, match: re.Match[str]) -> bool:
    """A run with an unbalanced parenthesis that is a call's argument, `f(3.14159...)` (read
    without it), not a tuple's first member, `home = (52.2297, ...`: its parenthesis follows
    no name."""
    if not match.group(0).startswith("("):
        return True
    before = text[match.start() - 1] if match.start() else " "
    return before.isalnum() or before == "_"


def safe_number(text: str, match: re.Match[str], min_digits: int, named: bool = False) -> bool:
    """Whether a digit run is a known-safe form; `named` (a word beside it names a
    document or a phone) makes a counting run (1234567) no placeholder."""
    run = match.group(0)
    digits = re.sub(r"\D", "", run)
    if len(digits) < min_digits or len(set(digits)) == 1:
        return True  # short, or a placeholder: 9999 9999 9999
    if not named and digits in "01234567890123456789":
        return True  # 1234567: a placeholder too, unless its word says whose it is
    tokens = run.split()
    if len(tokens) > 1 and any(DECIMAL.fullmatch(t) for t in tokens):
        return True  # a list of measurements: 0.25 0.25 0.5
    core = run.strip("()") if run.count("(") != run.count(")") and _argument(text, match) else run
    if VERSION.fullmatch(core) or DECIMAL.fullmatch(core) or _ROUND.fullmatch(core):
        return True
    if core.isdigit() and _power_of_two_ish(int(core)):
        return True
    before = text[max(0, match.start() - 24) : match.start()]
    if _epoch(run) or _snowflake(run, before):
        return True
    if NUMBER_NAME.search(before[-16:]):
        return True
    if run.isdigit() and _TIMESTAMP_KEY.search(before):
        return True
    if _UNIT_AFTER.match(text, match.end()):
        return True
    return fictional_number(run) or (7 <= len(digits) <= 13 and business_line(run))
