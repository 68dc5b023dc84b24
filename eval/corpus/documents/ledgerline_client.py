"""Ledgerline Invoicing API client.

A small, dependency-light client for the Ledgerline invoicing service, used by
our billing jobs and the customer portal back end.

Overview
--------
The client talks to version 2 of the Ledgerline REST API. The default base URL
is https://api.ledgerline.example/v2 and can be overridden for the sandbox
environment, which lives at https://sandbox.ledgerline.example/v2.

Authentication uses a Bearer token sent in the Authorization header. Tokens
are created in the Ledgerline dashboard under Settings > API keys and expire
after 90 days. Never commit a token to source control; read it from the
LEDGERLINE_TOKEN environment variable instead.

Rate limits
-----------
The Ledgerline API has a rate limit of 120 requests per minute per token. When
the limit is exceeded the server answers with HTTP 429 and a Retry-After
header, which this client respects.

Every request uses a default timeout of 15 seconds. Failed requests caused by
timeouts, connection errors, HTTP 429 or HTTP 5xx responses are retried up to
3 times with exponential backoff starting at 0.5 seconds. Client errors such
as HTTP 400 or 404 are never retried.

List endpoints are paginated. The default page size is 50 and the maximum page
size is 200; larger values are rejected by the server.

Example
-------
    client = LedgerlineClient.from_env()
    invoice = client.create_invoice(customer_id="cus_0042", lines=[
        {"description": "Consulting, March", "quantity": 10, "unit_amount": 12500},
    ])
    for inv in client.iter_invoices(status="open"):
        print(inv["id"], inv["amount_due"])
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

import httpx

DEFAULT_BASE_URL = "https://api.ledgerline.example/v2"
SANDBOX_BASE_URL = "https://sandbox.ledgerline.example/v2"
DEFAULT_TIMEOUT_SECONDS = 15.0
MAX_RETRIES = 3
BACKOFF_START_SECONDS = 0.5
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
RETRYABLE_STATUS = {429, 500, 502, 503, 504}

# Amounts are always integers in the smallest currency unit (cents for USD).
CURRENCY_MINOR_UNITS = {"USD": 2, "EUR": 2, "JPY": 0}


class LedgerlineError(Exception):
    """Raised when the API returns an error that should not be retried.

    The ``status`` attribute holds the HTTP status code and ``code`` holds the
    machine-readable error code from the response body, for example
    ``invoice_already_finalized``.
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code


@dataclass
class LedgerlineClient:
    """Client for the Ledgerline v2 invoicing API.

    Args:
        token: API token. Sent as a Bearer token in the Authorization header.
        base_url: API root. Defaults to the production URL.
        timeout: Per-request timeout in seconds. Defaults to 15 seconds.
        max_retries: How many times a retryable failure is retried. Defaults to 3.
    """

    token: str
    base_url: str = DEFAULT_BASE_URL
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    max_retries: int = MAX_RETRIES
    _http: httpx.Client = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=self.timeout,
            headers={
                "Authorization": f"Bearer {self.token}",
                "Accept": "application/json",
                "User-Agent": "ledgerline-python/2.3.0",
            },
        )

    @classmethod
    def from_env(cls, sandbox: bool = False) -> "LedgerlineClient":
        """Build a client from the LEDGERLINE_TOKEN environment variable.

        Pass ``sandbox=True`` to point the client at the sandbox environment,
        where no real invoices are sent to customers.
        """
        token = os.environ["LEDGERLINE_TOKEN"]
        return cls(token=token, base_url=SANDBOX_BASE_URL if sandbox else DEFAULT_BASE_URL)

    # ------------------------------------------------------------------ core

    def _request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """Send one request, retrying timeouts, 429 and 5xx responses.

        Backoff doubles after each attempt (0.5 s, 1 s, 2 s) with up to 20%
        random jitter. A Retry-After header from the server overrides the
        computed delay.
        """
        delay = BACKOFF_START_SECONDS
        for attempt in range(self.max_retries + 1):
            try:
                response = self._http.request(method, path, **kwargs)
            except (httpx.TimeoutException, httpx.ConnectError):
                if attempt == self.max_retries:
                    raise
            else:
                if response.status_code not in RETRYABLE_STATUS:
                    if response.is_error:
                        body = response.json()
                        raise LedgerlineError(
                            response.status_code, body.get("code", "unknown"), body.get("message", "")
                        )
                    return response.json()
                if attempt == self.max_retries:
                    response.raise_for_status()
                retry_after = response.headers.get("Retry-After")
                if retry_after is not None:
                    delay = float(retry_after)
            time.sleep(delay * (1 + random.uniform(0, 0.2)))
            delay *= 2
        raise RuntimeError("unreachable")

    # -------------------------------------------------------------- invoices

    def create_invoice(
        self, customer_id: str, lines: list[dict[str, Any]], currency: str = "USD", due_days: int = 30
    ) -> dict[str, Any]:
        """Create a draft invoice for a customer.

        Each line needs a ``description``, a ``quantity`` and a ``unit_amount``
        in minor units. New invoices are created as drafts and are due 30 days
        after they are finalized unless ``due_days`` says otherwise. An invoice
        may have at most 250 lines.
        """
        if len(lines) > 250:
            raise ValueError("an invoice may have at most 250 lines")
        return self._request(
            "POST",
            "/invoices",
            json={"customer_id": customer_id, "lines": lines, "currency": currency, "due_days": due_days},
        )

    def finalize_invoice(self, invoice_id: str) -> dict[str, Any]:
        """Finalize a draft invoice and email it to the customer.

        Finalized invoices can no longer be edited; to correct one, void it and
        create a new invoice.
        """
        return self._request("POST", f"/invoices/{invoice_id}/finalize")

    def void_invoice(self, invoice_id: str) -> dict[str, Any]:
        """Void a finalized invoice. Paid invoices cannot be voided."""
        return self._request("POST", f"/invoices/{invoice_id}/void")

    def iter_invoices(self, status: str | None = None, page_size: int = DEFAULT_PAGE_SIZE) -> Iterator[dict[str, Any]]:
        """Yield invoices one at a time, following pagination cursors.

        ``status`` may be ``draft``, ``open``, ``paid`` or ``void``. The page
        size defaults to 50 and may not exceed 200.
        """
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise ValueError(f"page_size must be between 1 and {MAX_PAGE_SIZE}")
        params: dict[str, Any] = {"limit": page_size}
        if status:
            params["status"] = status
        while True:
            page = self._request("GET", "/invoices", params=params)
            yield from page["data"]
            if not page.get("next_cursor"):
                return
            params["cursor"] = page["next_cursor"]

    def close(self) -> None:
        """Close the underlying HTTP connection pool."""
        self._http.close()
