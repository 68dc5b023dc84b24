"""The local model itself: a GGUF file run by llama.cpp in this process, one request at a time.

The runtime is `ik-llama-cpp-python` (Python bindings of ik_llama.cpp, a llama.cpp fork),
chosen because the registry serves it as a prebuilt manylinux wheel: `pip install` copies
it in seconds where llama-cpp-python compiles llama.cpp from source for 5-20 minutes. Its
bindings load the weights and declare most of llama.h; this module adds what a chat server
needs and they lack: the model's own chat template (rendered with Jinja, as the GGUF
ships it), grammar-constrained decoding (llama.cpp's GBNF sampler, for structured output),
stop strings, reuse of the previous request's prompt prefix in the KV cache, and exact
token counts.

Decoding at temperature 0 takes the most likely token (argmax over the logits, after the
grammar masked the tokens it forbids), so a request's reply depends on nothing but the
request. Above 0, tokens are drawn with numpy from the softmax (nucleus `top_p`) with a
generator seeded by the request's `seed`.
"""

from __future__ import annotations

import codecs
import ctypes
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
PIECE_BYTES = 256
# Prompt tokens per native micro-batch. ik-llama-cpp-python 0.1.5's batched kernels give
# other logits than one-token decoding once a micro-batch reaches 32 tokens (measured with
# SmolLM2's Q4_1 weights: the greedy first token of a chat reply changes from "The" to the
# end of turn); up to 16 they are identical, and prompt speed is about the same.
UBATCH = 16


class RequestError(ValueError):
    """A request the model cannot serve as asked (too long, bad template input)."""


@dataclass(frozen=True)
class Sampling:
    max_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: Sequence[str] = ()
    grammar: str | None = None


@dataclass
class Generation:
    """Filled in while a reply is generated: counts and why it ended."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reused_tokens: int = 0
    finish_reason: str = "stop"
    pieces: list[str] = field(default_factory=list)


def _bind(lib: Any, name: str, argtypes: list[Any], restype: Any) -> Any:
    function = getattr(lib, name)
    function.argtypes = argtypes
    function.restype = restype
    return function


class _Native:
    """The llama.h functions the bindings package does not declare (ik_llama.cpp's API)."""

    def __init__(self, lib: Any) -> None:
        p, i32 = ctypes.c_void_p, ctypes.c_int32
        self.chat_template = _bind(lib, "llama_model_chat_template", [p, p], ctypes.c_char_p)
        self.seq_rm = _bind(lib, "llama_kv_cache_seq_rm", [p, i32, i32, i32], ctypes.c_bool)
        self.grammar_init = _bind(
            lib, "llama_sampler_init_grammar", [p, ctypes.c_char_p, ctypes.c_char_p], p
        )
        self.grammar_sample = _bind(lib, "llama_grammar_sample", [p, p, p], None)
        self.grammar_accept = _bind(lib, "llama_grammar_accept_token", [p, p, i32], None)
        self.grammar_free = _bind(lib, "llama_grammar_free", [p], None)
        self.token_bos = _bind(lib, "llama_token_bos", [p], i32)
        self.token_eos = _bind(lib, "llama_token_eos", [p], i32)


class _CandidateArray(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("size", ctypes.c_size_t),
        ("selected", ctypes.c_int64),
        ("sorted", ctypes.c_bool),
    ]


class LocalModel:
    """One GGUF model and one context; callers serialize requests (one slot)."""

    def __init__(self, path: Path, n_ctx: int = 4096, n_threads: int | None = None) -> None:
        from ik_llama_cpp import _ctypes_api, _internals

        self._c: Any = _ctypes_api
        self._batches: Any = _internals
        self._native = _Native(_ctypes_api._lib)
        self._weights: Any = _internals.IkModel(str(path))
        self._model = self._weights.model
        params = _ctypes_api.llama_context_default_params()
        # llama-cpp-python's default: half the cores. On a shared 2-core machine two
        # threads spin-wait on each other (measured: 10x slower decoding than one).
        threads = n_threads or max(1, (os.cpu_count() or 2) // 2)
        params.n_ctx = params.n_batch = n_ctx
        params.n_ubatch = UBATCH
        params.n_threads = params.n_threads_batch = threads
        params.flash_attn = False  # its CPU kernels assert on long prompts without AVX-VNNI
        self._ctx = _ctypes_api.llama_init_from_model(self._model, params)
        if not self._ctx:
            raise RuntimeError(f"llama.cpp could not create a context for {path.name}")
        self.n_ctx = n_ctx
        self.n_vocab = int(self._weights.n_vocab)
        self.name = path.name
        self._cached: list[int] = []  # tokens whose keys and values are in the KV cache
        self._template = self._load_template()

    # -- prompt --------------------------------------------------------------------------
    def _piece(self, token: int, special: bool) -> bytes:
        buf = ctypes.create_string_buffer(PIECE_BYTES)
        n = self._c.llama_token_to_piece(self._model, token, buf, PIECE_BYTES, 0, special)
        return buf.raw[: max(n, 0)]

    def _load_template(self) -> Any:
        import jinja2.sandbox

        raw = self._native.chat_template(self._model, None)
        if not raw:
            raise RequestError(f"{self.name} has no chat template")
        env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = _raise_template_error
        return env.from_string(raw.decode("utf-8"))

    def render(self, messages: Sequence[dict[str, Any]]) -> str:
        """The prompt text: the GGUF's own chat template over the messages."""
        special = {
            name: self._piece(getter(self._model), True).decode("utf-8", "replace")
            for name, getter in (("bos", self._native.token_bos), ("eos", self._native.token_eos))
        }
        return str(
            self._template.render(
                messages=list(messages),
                add_generation_prompt=True,
                bos_token=special["bos"],
                eos_token=special["eos"],
            )
        )

    def tokenize(self, text: str, *, special: bool = True) -> list[int]:
        return list(self._weights.tokenize(text, add_bos=special, special=special))

    # -- decoding ------------------------------------------------------------------------
    def _decode(self, tokens: list[int], start: int) -> None:
        batch = self._batches.make_batch_range(tokens, pos_start=start, logits_last=True)
        try:
            failed = self._c.llama_decode(self._ctx, batch)
        finally:
            self._c.llama_batch_free(batch)
        if failed:
            self._cached = []
            raise RuntimeError(f"llama_decode failed with status {failed}")

    def _prefill(self, tokens: list[int]) -> int:
        """Decode the prompt, reusing the longest prefix already in the KV cache."""
        reuse = 0
        for old, new in zip(self._cached, tokens[:-1], strict=False):  # the last is decoded
            if old != new:
                break
            reuse += 1
        if not reuse or not self._native.seq_rm(self._ctx, 0, reuse, -1):
            reuse = 0
            self._c.llama_kv_cache_clear(self._ctx)
        self._cached = tokens[:reuse]
        self._decode(tokens[reuse:], reuse)
        self._cached = list(tokens)
        return reuse

    def _logits(self) -> Any:
        pointer = self._c.llama_get_logits_ith(self._ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)).astype(np.float32)

    def _masked(self, logits: Any, grammar: Any, ids: Any) -> Any:
        """The logits of `ids` with those the grammar forbids set to -inf."""
        candidates = np.zeros(len(ids), dtype=TOKEN_DATA)
        candidates["id"] = ids
        candidates["logit"] = logits[ids]
        array = _CandidateArray(candidates.ctypes.data, len(ids), -1, False)
        self._native.grammar_sample(grammar, self._ctx, ctypes.addressof(array))
        return candidates["logit"]

    def _constrained(self, logits: Any, sampling: Sampling, grammar: Any, rng: Any) -> int:
        """A token the grammar allows, checking the model's own choice first.

        Masking the whole vocabulary costs the grammar a walk over ~49k tokens (seconds
        a token on a small CPU); the model's choice is usually allowed, so it is checked
        alone and the full mask is only built when the grammar refuses it. At temperature
        0 the result is the same token either way: the most likely allowed one.
        """
        token = self._choose(logits, sampling, rng)
        if np.isfinite(self._masked(logits, grammar, np.array([token], np.int32))[0]):
            return token
        masked = logits.copy()
        masked[:] = self._masked(logits, grammar, np.arange(self.n_vocab, dtype=np.int32))
        return self._choose(masked, sampling, rng)

    @staticmethod
    def _choose(logits: Any, sampling: Sampling, rng: Any) -> int:
        if sampling.temperature <= 0:
            return int(np.argmax(logits))
        scaled = (logits - logits.max()) / sampling.temperature
        probs = np.exp(scaled)
        probs /= probs.sum()
        order = np.argsort(-probs)
        keep = int(np.searchsorted(np.cumsum(probs[order]), sampling.top_p)) + 1
        kept = order[:keep]
        return int(rng.choice(kept, p=probs[kept] / probs[kept].sum()))

    def generate(
        self, messages: Sequence[dict[str, Any]], sampling: Sampling, result: Generation
    ) -> Iterator[str]:
        """Yield the reply's text in pieces; `result` holds counts and the finish reason."""
        tokens = self.tokenize(self.render(messages))
        result.prompt_tokens = len(tokens)
        if len(tokens) + sampling.max_tokens > self.n_ctx:
            raise RequestError(
                f"Requested tokens ({len(tokens)} in the prompt + {sampling.max_tokens} "
                f"max_tokens) exceed the context window of {self.n_ctx}"
            )
        grammar = None
        if sampling.grammar is not None:
            grammar = self._native.grammar_init(
                self._weights.vocab, sampling.grammar.encode("utf-8"), b"root"
            )
            if not grammar:
                raise RequestError("the response_format's grammar could not be parsed")
        try:
            result.reused_tokens = self._prefill(tokens)
            yield from self._sample_loop(sampling, grammar, len(tokens), result)
        finally:
            if grammar:
                self._native.grammar_free(grammar)

    def _sample_loop(
        self, sampling: Sampling, grammar: Any, position: int, result: Generation
    ) -> Iterator[str]:
        rng = np.random.default_rng(sampling.seed)
        stops = _StopScanner(sampling.stop)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        result.finish_reason = "length"
        for _ in range(sampling.max_tokens):
            logits = self._logits()
            if grammar:
                token = self._constrained(logits, sampling, grammar, rng)
            else:
                token = self._choose(logits, sampling, rng)
            if self._c.llama_token_is_eog(self._model, token):
                result.finish_reason = "stop"
                break
            result.completion_tokens += 1
            if grammar:
                self._native.grammar_accept(grammar, self._ctx, token)
            text, stopped = stops.feed(decoder.decode(self._piece(token, False)))
            if text:
                yield text
            if stopped:
                result.finish_reason = "stop"
                return
            self._decode([token], position)
            self._cached.append(token)
            position += 1
        tail, _ = stops.feed(decoder.decode(b"", final=True), final=True)
        if tail:
            yield tail


class _StopScanner:
    """Holds back text that could be the start of a stop string until it is decided."""

    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = [s for s in stops if s]
        self.pending = ""

    def feed(self, text: str, final: bool = False) -> tuple[str, bool]:
        self.pending += text
        hits = [self.pending.find(s) for s in self.stops if s in self.pending]
        if hits:
            out, self.pending = self.pending[: min(hits)], ""
            return out, True
        hold = 0 if final else max((self._partial(s) for s in self.stops), default=0)
        out = self.pending[: len(self.pending) - hold]
        self.pending = self.pending[len(out) :]
        return out, False

    def _partial(self, stop: str) -> int:
        """How many trailing characters of the pending text begin `stop`."""
        for n in range(min(len(stop) - 1, len(self.pending)), 0, -1):
            if self.pending.endswith(stop[:n]):
                return n
        return 0


def _raise_template_error(message: str) -> None:
    raise RequestError(f"chat template: {message}")


class VocabTokenizer:
    """A GGUF file's tokenizer alone (`vocab_only`: no weights are loaded)."""

    def __init__(self, path: Path) -> None:
        from ik_llama_cpp import _ctypes_api as c

        if not path.is_file():
            raise OSError(f"no such file: {path}")
        c.llama_backend_init()
        params = c.llama_model_default_params()
        params.vocab_only = True
        self._c: Any = c
        self._model = c.llama_model_load_from_file(str(path).encode("utf-8"), params)
        if not self._model:
            raise ValueError(f"llama.cpp could not load the vocabulary of {path.name}")

    def count(self, text: str) -> int:
        data = text.encode("utf-8")
        needed = abs(self._c.llama_tokenize(self._model, data, len(data), None, 0, False, False))
        buf = (self._c.llama_token * max(needed, 1))()
        return int(self._c.llama_tokenize(self._model, data, len(data), buf, needed, False, False))
