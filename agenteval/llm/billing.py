"""`metered` costs: a provider's billing API read before and after a run.

The client speaks OpenAI's organization costs API (`GET {base_url}/organization/costs`,
`start_time` in Unix seconds, daily buckets, `amount.value` in `amount.currency`, pages
through `has_more` / `next_page`), with an admin key from the variable `api_key_env` names.
Both snapshots count from one fixed window start — the run's first UTC midnight — so usage
older than the run cannot drop out between them (a sliding "last N days" window makes
deltas negative). The meter trails the calls it counts, so the closing snapshot waits
`lag_s` first. It is account-wide (or project-wide with `project_ids`): whatever else used
the account in the window is in the figure, and the report says so.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agenteval.llm.scrub import Scrubber

KINDS = ("openai_costs",)
MAX_PAGES = 50  # a 180-bucket page covers half a year: more pages is a loop, not a window


class MeterError(Exception):
    """The billing API could not be read; the message never carries the key."""


def window_start(now: float) -> int:
    """The fixed start both snapshots count from: the UTC midnight before `now`."""
    day = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return int(day.timestamp())


@dataclass
class OpenAICostsMeter:
    base_url: str
    api_key: str
    project_ids: list[str] = field(default_factory=list)
    timeout_s: float = 30.0

    def spent_since(self, start: int) -> float:
        """USD the organization (or its listed projects) was charged since `start`."""
        import httpx

        total, page = 0.0, None
        headers = {"Authorization": f"Bearer {self.api_key}"}
        with httpx.Client(timeout=self.timeout_s) as client:
            for _ in range(MAX_PAGES):
                query: dict[str, Any] = {"start_time": start, "bucket_width": "1d", "limit": 180}
                if self.project_ids:
                    query["project_ids"] = self.project_ids
                if page:
                    query["page"] = page
                url = self.base_url.rstrip("/") + "/organization/costs"
                try:
                    reply = client.get(url, params=query, headers=headers)
                except httpx.HTTPError as exc:
                    raise MeterError(f"billing meter {url}: {type(exc).__name__}") from None
                body = self._page(reply, url)
                total += sum(
                    _usd(r) for b in body.get("data") or [] for r in b.get("results") or []
                )
                page = body.get("next_page")
                if not body.get("has_more") or not page:
                    return round(total, 6)
        raise MeterError(f"billing meter: more than {MAX_PAGES} pages since {start}")

    def _page(self, reply: Any, url: str) -> dict[str, Any]:
        if reply.status_code != 200:
            text = Scrubber(secret_values=[self.api_key]).scrub_text(reply.text[:300])
            raise MeterError(f"billing meter {url}: HTTP {reply.status_code}: {text}")
        try:
            body = reply.json()
        except ValueError:
            raise MeterError(f"billing meter {url}: the reply is not JSON") from None
        if not isinstance(body, dict):
            raise MeterError(f"billing meter {url}: the reply is not a page object")
        return body


def _usd(result: Mapping[str, Any]) -> float:
    amount = result.get("amount") or {}
    currency = str(amount.get("currency") or "usd").lower()
    if currency != "usd":
        raise MeterError(f"billing meter: an amount in {currency}, not usd")
    return float(amount.get("value") or 0.0)


def open_meter(section: Mapping[str, Any]) -> OpenAICostsMeter:
    """The meter run.meter describes; a ValueError naming the key when it cannot be made."""
    kind = section.get("kind", "openai_costs")
    if kind not in KINDS:
        raise ValueError(f"run.meter.kind: {kind!r} is not one of {', '.join(KINDS)}")
    variable = str(section.get("api_key_env") or "")
    key = os.environ.get(variable, "").strip() if variable else ""
    if not key:
        raise ValueError(f"run.meter.api_key_env: the variable {variable or '(unset)'} is empty")
    return OpenAICostsMeter(
        base_url=str(section.get("base_url") or "https://api.openai.com/v1"),
        api_key=key,
        project_ids=[str(p) for p in section.get("project_ids") or []],
    )


@dataclass
class Reading:
    """One metered leg of a run: the two snapshots and what lay between them."""

    start: int
    before: float
    after: float

    @property
    def usd(self) -> float:
        return round(self.after - self.before, 6)


def metered(
    meter: OpenAICostsMeter,
    run: Callable[[], Any],
    lag_s: float = 90.0,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[Any, Reading]:
    """Run `run` between two snapshots from one window start (a run that raises takes no
    closing snapshot: its error goes on)."""
    start = window_start(clock())
    before = meter.spent_since(start)
    outcome = run()
    if lag_s > 0:
        sleep(lag_s)
    return outcome, Reading(start, before, meter.spent_since(start))
