"""Content-addressed on-disk cache of completions.

The key covers everything that determines a reply (protocol, base URL, model, the exact
request body) plus the sample it belongs to (the unit's iteration index and seed): an unchanged
rerun is served entirely from disk, while repeated samples of the same request stay
independent, across iterations (0, 1, 2, ...) and across runs with other seeds alike
(`agenteval noise` runs every repeat with another seed).
Request headers, where the key travels, are never part of the key or the stored value, and
the base URL is keyed without its user-info and query string (`Endpoint.public_base_url`),
and a request relayed by the tasks' model gateway is keyed by the model's own URL, never the
gateway's per-run port (`Endpoint.cache_base_url`).
A reply is scrubbed before it is written by the sessions' own scrubber (`llm.private`: the
endpoint's key value however the reply re-wraps it, every secret shape, personal data,
e-mail addresses, home folders), so an endpoint that echoes a credential or a person's data
leaves none on disk. A reply that still holds anything that LOOKS private after that (the
residue gate, `llm.residue`: a long digit run, an id beside its document's name, an e-mail in
any obfuscation, an address, a random-looking token) is simply not cached: it is asked again
next time, never stored; `ResponseCache.withheld` counts those.

The cache is a DVC output of the `infer` stage (dvc.yaml): `dvc push` ships it to the team's
remote so a teammate's re-inference is answered from it. That is safe only because no entry
holds a secret; the entries are replies, never requests, and keys are sha256 digests.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agenteval.llm.private import PrivateScrubber
from agenteval.llm.residue import residue, strings_of
from agenteval.llm.types import Completion

CACHE_FORMAT = 1
log = logging.getLogger(__name__)
# The Cache Directory Tagging convention (https://bford.info/cachedir/): backup tools skip a
# folder holding it. It also keeps an unused cache from being an empty DVC output, which DVC
# warns about on every `dvc repro` of the offline default (no model is called).
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by agenteval (its response cache).\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


def canonical_json(value: Any) -> str:
    """Stable serialisation: sorted keys, no whitespace, so equal requests hash equally."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key(
    protocol: str, base_url: str, model: str, body: Any, iteration: int, seed: int = 0
) -> str:
    payload = {
        "format": CACHE_FORMAT,
        "protocol": protocol,
        "base_url": base_url,
        "model": model,
        "body": body,
        "iteration": iteration,
        "seed": seed,
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def tag_cache_dir(root: Path) -> None:
    """Make `root` a tagged cache directory (CACHEDIR.TAG), once."""
    tag = root / "CACHEDIR.TAG"
    if not tag.is_file():
        root.mkdir(parents=True, exist_ok=True)
        tag.write_text(CACHEDIR_TAG, encoding="utf-8")


class ResponseCache:
    """Directory of `<key[:2]>/<key>.json` files, each holding one Completion."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.withheld = 0  # replies not cached: private-looking residue after scrubbing

    def path_for(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Completion | None:
        path = self.path_for(key)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if raw.get("format") != CACHE_FORMAT:
                return None
            completion = Completion.model_validate(raw["completion"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError, ValidationError):
            # A damaged entry is a miss; the fresh reply will overwrite it.
            return None
        return completion.model_copy(update={"cached": True})

    def put(
        self, key: str, completion: Completion, scrubber: PrivateScrubber | None = None
    ) -> bool:
        """Store `completion` scrubbed (by `scrubber`, the endpoint's; else one that knows
        the environment's secret values); False, and nothing written, when the scrubbed
        reply still holds or looks like private data."""
        path = self.path_for(key)
        stored = completion.model_copy(update={"cached": False}).model_dump(mode="json")
        scrubber = scrubber or PrivateScrubber()
        clean = scrubber.scrub(stored)
        if any(scrubber.leaks(text) or residue(text) for text in strings_of(clean)):
            self.withheld += 1
            log.info("reply not cached (%d so far): still looks private", self.withheld)
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        text = canonical_json({"format": CACHE_FORMAT, "completion": clean})
        # Write to a temp file in the same directory and rename, so concurrent readers and
        # an interrupted run never see a half-written entry.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return True
