"""Fake billing API speaking OpenAI's organization costs shape (GET /v1/organization/costs).

The charges are whatever `charged()` says now (a test ties it to the requests another fake
server answered); they are reported as daily buckets from `start_time`, split over two
pages so clients must follow `next_page`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlparse

from .common import FakeLLMServer, Raw, RecordedRequest, Reply


class BillingServer(FakeLLMServer):
    def __init__(self, charged: Callable[[], float], *, api_key: str) -> None:
        super().__init__(api_key=api_key)
        self.charged = charged
        self.reply_fn = self._page

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def route_ok(self, method: str, path: str) -> bool:
        return method == "GET" and urlparse(path).path == "/v1/organization/costs"

    def check_request(self, request: RecordedRequest) -> Raw | None:
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            error = {"message": "admin key required (test server)", "type": "invalid_request_error"}
            return Raw(401, {"error": error})
        query = parse_qs(urlparse(request.path).query)
        if "start_time" not in query:
            return Raw(400, {"error": {"message": "start_time is required"}})
        self.last_query = query
        return None

    def _page(self, _body: Any) -> Raw:
        query = self.last_query
        start = int(query["start_time"][0])
        total = self.charged()
        # yesterday's bucket holds a fixed amount (usage before the run), today's the rest
        buckets = [(start, 1.25), (start + 86400, total)]
        first = "page" not in query
        bucket_start, value = buckets[0] if first else buckets[1]
        page = {
            "object": "page",
            "data": [{"object": "bucket", "start_time": bucket_start,
                      "end_time": bucket_start + 86400,
                      "results": [{"object": "organization.costs.result",
                                   "amount": {"value": value, "currency": "usd"},
                                   "line_item": None, "project_id": None}]}],
            "has_more": first,
            "next_page": "page_2" if first else None,
        }  # fmt: skip
        return Raw(200, page)

    def render(self, reply: Reply, request: Any) -> dict[str, Any]:
        raise NotImplementedError  # every answer is a Raw page
