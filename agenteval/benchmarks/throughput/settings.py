"""The `throughput` section of pipelines/throughput/params.yaml: the endpoints swept, the
levels, the request settings. Its one home: the loader composes it onto the shared params
(agenteval.benchmarks.base.params_model), docs/configuration.md and the JSON Schema are
generated from it."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from agenteval.schema.params_base import EndpointFields, _Section


class LoopbackScript(_Section):
    """`throughput.endpoints[].script`: what the scripted loopback endpoint promises."""

    ttft_ms: float = Field(25.0, gt=0, description="Time to the first token.")
    tokens_per_s: float = Field(250.0, gt=0, description="Pace of the tokens after it.")
    reply_words: int = Field(24, ge=1, description="Words after the label line.")
    fail_every: int = Field(0, ge=0, description="Every Nth request gets a 503; 0: none.")
    usage: bool = Field(True, description="Report usage (false: counts are the tokenizer's).")


class ThroughputEndpoint(EndpointFields):
    """One endpoint of the sweep: the scripted loopback, the local model, or a URL."""

    name: str = Field(min_length=1, description="Label in reports and the gate.")
    kind: Literal["loopback", "local", "url"] = Field(
        "loopback", description="loopback (scripted, offline) | local (serve-local) | url"
    )
    script: LoopbackScript | None = Field(None, description="loopback: the script.")

    @model_validator(mode="after")
    def _url_names_a_model(self) -> ThroughputEndpoint:
        if self.kind == "url" and not (self.model and self.base_url):
            raise ValueError(f"endpoint {self.name!r}: kind url needs model and base_url")
        return self


def _loopback_endpoints() -> list[ThroughputEndpoint]:
    return [
        ThroughputEndpoint(name="loopback-openai", kind="loopback", protocol="openai"),
        ThroughputEndpoint(name="loopback-anthropic", kind="loopback", protocol="anthropic"),
    ]


class ThroughputParams(_Section):
    """`suite.kind: throughput`: email triage streamed at a sweep of concurrency levels."""

    workload: str = Field("eval/throughput/emails.yaml", description="The pinned emails.")
    prompt: str = Field("eval/throughput/prompt.md", description="The triage instructions.")
    ids: list[str] = Field(default_factory=list, description="Empty: every email.")
    endpoints: list[ThroughputEndpoint] = Field(default_factory=_loopback_endpoints, min_length=1)
    concurrency: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [1, 4, 16, 64], min_length=1, description="Levels swept."
    )
    repeats: int = Field(2, ge=1, description="Repeats of each level (intervals need 2+).")
    warmup: int = Field(2, ge=0, description="Requests sent first and excluded.")
    max_tokens: int = Field(96, ge=1)
    temperature: float = Field(0.0, ge=0)
    timeout_s: float = Field(120.0, gt=0, description="Per request, the whole stream.")
    max_attempts: int = Field(3, ge=1, description="Tries per request (retries counted).")
    tokenizer: str = Field(
        "auto", description="auto (the local model's GGUF for kind local) | none | a .gguf"
    )

    @model_validator(mode="after")
    def _levels_and_names(self) -> ThroughputParams:
        names = [e.name for e in self.endpoints]
        if len(set(names)) != len(names):
            raise ValueError(f"endpoint names repeat: {names}")
        return self
