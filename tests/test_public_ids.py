"""Public identifiers cost no case (`llm.public_ids`): a look-alike corpus of the project's own
(values written for this file, none a red team's), each in the context a transcript has it,
must pass the scrubber verbatim and leave the residue gate nothing; private values beside the
same words still cost their case, and a dropped case says which family dropped it."""

from __future__ import annotations

import pytest

from agenteval.benchmarks.sessions.steps import LOOKS_PRIVATE, _drop_reason
from agenteval.llm.private import PrivateScrubber
from agenteval.llm.residue import residue

# (kind, value, the text it stands in)
PUBLIC = [
    ("doi", "10.1038/s41586-021-03819-2", "cite it as doi:{v} in the README"),
    ("doi", "10.48550/arXiv.2310.06825", "the paper ({v}) describes the tokenizer"),
    ("doi", "10.1145/3442188.3445922", "see https://doi.org/{v} for the method"),
    ("isbn", "978-0-13-468599-1", "the book is ISBN {v}, second edition"),
    ("isbn", "0-596-52068-9", "ISBN-10: {v}"),
    ("isbn", "979-8-6024-7728-3", "reference {v} in the bibliography"),
    ("issn", "1548-7091", "journal ISSN {v} (print)"),
    ("issn", "2041-1723", "eISSN: {v}"),
    ("arxiv", "2307.09288v2", "compare with arXiv:{v} before we pin it"),
    ("arxiv", "1706.03762", "the attention paper, arxiv {v}, section 3"),
    ("pubmed", "31452104", "PMID: {v} reports the dosage"),
    ("pubmed", "PMC6822218", "full text at {v} on Europe PMC"),
    ("ups", "1Z4A96W20391847265", "the UPS tracking number is {v}, please check status"),
    ("ups", "1Z8V74E40367251198", "label printed: {v}"),
    ("fedex", "7749 2038 6615", "FedEx tracking {v} says delayed"),
    ("usps", "9400 1118 9922 3847 5561 02", "USPS tracking number: {v}"),
    ("dhl", "4827163950", "DHL waybill {v} for the return"),
    ("postnl", "3SABCD1234567", "track and trace {v}"),
    ("cache key hex", "e3b7c0f1a2d94e68b5c7d8e9f0a1b2c3", "cache key {v} missed, refetching"),
    ("cache key b64url", "n4Bq0Yl7XzJv2sWcT9kPfR1dLh8mEaQuKoGiVb3yNx0", "cache key: {v}"),
    ("content hash", "5d41402abc4b2a76b9719d911017c592", "content hash {v} unchanged"),
    ("build id", "b81f2c7e9a4d4e1fb3c06d5a8e2f7c91", "build id: {v} (green)"),
    ("request id", "req_Hz4Lm8PqW2vNc7Ts", "Stripe says request id {v} failed"),
    ("request id", "2f9c1a7e-5b3d-4e8f-a6c2-9d0b1e4f7a35", "x-request-id: {v}"),
    ("trace id", "4bf92f3577b34da6a3ce929d0e0e4736", "trace id {v} spans three services"),
    ("trace id", "Root=1-6571c2a4-3f9e8d7c6b5a493827160514", "X-Amzn-Trace-Id: {v}"),
    ("span id", "00f067aa0ba902b7", "span_id={v} parent"),
    ("commit sha", "8f14e45fceea167a5a36dedd4bea2543cc4b9d2e", "reverted commit {v} yesterday"),
    ("commit sha", "a3c9e1f", "cherry-pick a3c9e1f onto main".replace("a3c9e1f", "{v}")),
    ("uuid", "c9bf9e57-1685-4c89-bafb-ff5af830be8a", "job {v} is stuck in PENDING"),
    ("ulid", "01HGW2N7ZQK8X4T9R6M3D5B1CF", "event id {v} replayed"),
    ("ksuid", "2Aw6pXdHcUqG0bYvNw8sKjRmT4L", "ksuid: order id {v}"),
    ("snowflake", "1183950472658993152", '{"message_id": {v}, "author": "bot"}'),
    ("snowflake", "1052348801237614602", "Discord channel id {v} muted"),
    (
        "sha256 digest",
        "sha256:3b5d5c3712955042212316173ccf37be8000e1a1f9d5d2f3e8b4c5a6d7e8f901",
        "image digest {v} pulled",
    ),
    ("etag", 'W/"5f3a-Qm9vYmFyYmF6cXV4MTIzNDU2"', "the ETag was {v} on both"),
    ("semver", "v4.17.3-rc.2+build.451", "tag {v} is on the registry"),
    ("semver", "lodash@4.17.21", "bump {v} in package.json"),
    ("semver", "2.31.0-alpha.7", "requests {v} broke it"),
    ("cve", "CVE-2024-3094", "{v} (xz backdoor) affects 5.6.0"),
    ("cve", "CVE-2021-44228", "patch {v} before Friday"),
    ("ghsa", "GHSA-jfh8-c2jp-5v3q", "advisory {v} is log4shell"),
    ("rfc", "RFC 9110", "per {v} the header is case-insensitive"),
    ("rfc", "RFC7519", "JWTs are {v}"),
    ("port", "127.0.0.1:8443", "listen on {v} for the proxy"),
    ("port", "localhost:54321", "postgres at {v}"),
    ("line number", "app.py:1284:17", "error at {v}: E501"),
    ("line number", "line 20418", "the parser fails at {v} of the dump"),
    ("timestamp", "2026-03-14T09:26:53.589793+00:00", "started {v}"),
    ("timestamp", "20260314T092653Z", "X-Amz-Date: {v}"),
    ("timestamp", "14/Mar/2026:09:26:53 +0000", '10.0.0.7 - - [{v}] "GET / HTTP/1.1"'),
    ("timestamp", "Sat, 14 Mar 2026 09:26:53 GMT", "Last-Modified: {v}"),
    ("timestamp", "1773480413", "expires_at={v}"),
    ("timestamp", "1773480413589", "ts={v}"),
    ("timestamp", "1773480413589793", "created {v} (microseconds)"),
    ("timestamp", "1773480413589793238", "time_unix_nano: {v}"),
    ("timestamp", "20260314", "nightly-{v} build"),
    ("ipv4 doc", "203.0.113.42", "the client at {v} retried"),
    ("ipv4 doc", "198.51.100.7", "allow {v} in the firewall"),
    ("ipv6 doc", "2001:db8:85a3::8a2e:370:7334", "AAAA record {v}"),
    ("ipv6", "fe80::1ff:fe23:4567:890a", "link-local {v} on eth0"),
    ("issue", "#48213", "fixed in {v}"),
    ("issue", "PLAT-20931", "see {v} for the design"),
    ("pr", "!4421", "merge request {v} is ready"),
    ("money", "$1,284,906.50", "revenue was {v} this quarter"),
    ("money", "€2.750.000", "budget {v} approved"),
    ("money", "1 204 000 EUR", "the grant is {v}"),
    ("measurement", "1,048,576 bytes", "buffer of {v}"),
    ("measurement", "12345678 ms", "took {v} overall"),
    ("measurement", "4,194,304 tokens", "context of {v}"),
    ("measurement", "3800000 rows", "loaded {v} into staging"),
    ("measurement", "2.4 GHz", "a {v} CPU"),
    ("k8s", "resourceVersion: 58210394", "conflict at {v}"),
    ("pid", "pid 2283941", "killed {v}"),
    ("version", "3.12.7", "python {v} on the runner"),
    ("docker tag", "node:20.11.1-bookworm-slim", "FROM {v}"),
    ("container id", "4f3c2b1a0e9d", "docker logs {v}"),
    (
        "sri",
        "sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC",
        'integrity="{v}"',
    ),
    ("go.sum", "h1:9ZcJ6wRb0fNq1yH2s3KxTq8YvL7mP4oD5uE6iG7hJ8k=", "golang.org/x/net v0.21.0 {v}"),
    ("gravatar", "https://www.gravatar.com/avatar/205e460b479e2e5b48aec07710c08d50", "avatar {v}"),
    ("css colour", "#3b82f6", "the button colour {v}"),
    ("hex address", "0x7ffd5c8e2a10", "segfault at {v}"),
    ("seed", "seed 918273645", "reproduce with {v}"),
    ("order", "order 7730192845", "refund {v} please"),
    ("isbn", "9780262046824", "bibtex: isbn = {{v}}"),
    ("ean", "4006381333931", "EAN {v} on the box"),
    ("s10", "AB123456789GB", "Royal Mail tracking number: {v}"),
    ("request id", "x7Ck3n9vB2qLmZ0pW4rT8yS6dF1gH5jK_aQ==", "CloudFront request ID: {v}"),
    ("cf-ray", "8a1b2c3d4e5f6a7b-FRA", "cf-ray: {v}"),
    ("ksuid", "0ujtsYcgvSTl8PAuAdqWYSMnLOv", "ksuid {v}"),
    ("pid", "sshd[2983117]", "May 17 14:03:22 web01 {v}: Accepted publickey"),
    ("xid", "xid 58210394", "Postgres LSN 16/B374D848, {v}"),
    (
        "version id",
        "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8gdRQBpUMLUo",
        "S3 version id {v}",
    ),
]


@pytest.fixture(scope="module")
def scrubber() -> PrivateScrubber:
    return PrivateScrubber(env={})


def test_the_corpus_is_wide_enough() -> None:
    assert len(PUBLIC) >= 80 and len({kind for kind, _, _ in PUBLIC}) >= 30


@pytest.mark.parametrize(("kind", "value", "context"), PUBLIC, ids=[p[0] for p in PUBLIC])
def test_a_public_identifier_costs_no_case(
    scrubber: PrivateScrubber, kind: str, value: str, context: str
) -> None:
    text = context.replace("{v}", value)
    clean = scrubber.scrub(text)
    assert value in clean, (kind, clean)
    assert residue(clean) == [], (kind, residue(clean))


def test_one_case_of_all_of_them_is_kept(scrubber: PrivateScrubber) -> None:
    text = "\n".join(f"- {context.replace('{v}', value)}" for _, value, context in PUBLIC)
    clean = scrubber.scrub(text)
    assert _drop_reason([clean], scrubber) is None
    assert all(value in clean for _, value, _ in PUBLIC)


# The same words beside what IS private: the public names open no hole.
PRIVATE_BESIDE_PUBLIC_WORDS = [
    "the api key: Xk29PqLm7Rt4Vw8Nz3Bc6Hd1",  # 'key' alone is no public name
    "session token Zr8Kd2Lm5Qp9Wx3Vb7Nc4Tf6",
    "tracking? call her on 0171 4839 2210 tonight",
    "my passport number is X4827163950",
    "personnummer 19740205-6163",
    "cache key: Xk29PqLm7-pass-Rt4Vw8Nz3Bc6Hd1QQ",  # not a digest's length: a value
    "DOB 1974-02-05, patient in bed 4",
    "wire it to account 48213097 EUR",  # no amount: an ungrouped account number
    "HEROKU_API_KEY=3f9c2a7e-1b4d-4e8f-a6c2-9d0b1e4f7a35",  # a UUID may be the key itself
]


@pytest.mark.parametrize("text", PRIVATE_BESIDE_PUBLIC_WORDS)
def test_private_values_beside_public_words_still_cost_their_case(
    scrubber: PrivateScrubber, text: str
) -> None:
    clean = scrubber.scrub(text)
    assert clean != text or residue(clean), text


def test_a_dropped_case_names_the_family_that_dropped_it(scrubber: PrivateScrubber) -> None:
    reason = _drop_reason(["ring me on 0171 4839 2210 after five"], scrubber)
    assert reason == f"{LOOKS_PRIVATE} (long digit run)"


def test_an_env_listing_keeps_its_public_values_and_loses_its_secrets(
    scrubber: PrivateScrubber,
) -> None:
    secret = "Lq8Zr2mX5vK1pW7tNc4Hd9Sb"
    listing = "\n".join(
        [
            f"SENTRY_AUTH_TOKEN={secret}",
            "DEPLOY_ID=5b2e9f0c-1d7a-4c3e-8f6b-2a9d0e7c4b18",  # not the token's wrapped tail
            "HEAD_SHA=9c4e1b7a2f0d8e6c3b5a9f1e7d2c4b8a0e6f3d1c",
            "SSH_DEPLOY_KEY_PUB=ssh-ed25519 "
            "AAAAC3NzaC1lZDI1NTE5AAAAIHk3mQ9vX2pL7rT4wN8cB1dF6gJ0sA5eK9uY2oI3zR7q ci@build",
            "STRIPE_PK=pk_test_51HxQ2mLk8vR3tN7pW4cZ9bY6dF1gJ0sA5eK",
            "OPENAI_API_KEY_SAMPLE=sk-...your-key-here...",
        ]
    )
    clean = scrubber.scrub(listing)
    assert secret not in clean
    for kept in listing.splitlines()[1:]:
        assert kept in clean, kept


def test_a_wrapped_tail_is_still_a_tail_when_no_variable_begins_it(
    scrubber: PrivateScrubber,
) -> None:
    tail = "Qm9vYmFyQmF6cXV4MTIz4aB="
    clean = scrubber.scrub(f"GITLAB_TOKEN=glpat-Zq8Wm2Xr5Tn7Kp3Lv9Bc\n{tail}\n")
    assert tail not in clean
