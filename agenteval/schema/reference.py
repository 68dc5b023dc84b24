"""docs/configuration.md, generated from the typed params (`agenteval.schema.params`).

`agenteval schema export` writes it beside the JSON Schemas and `agenteval schema check` (CI)
fails while it differs from the models, so the reference cannot fall behind the code: a key,
type, default or description is changed in one place, the model.
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from agenteval.schema.params import Params

REFERENCE = Path("docs/configuration.md")
FIX = "agenteval schema export"

HEADER = f"""\
# Configuration reference

<!-- Generated from agenteval/schema/params.py and the settings.py of each benchmark in
     agenteval/benchmarks/base.py's registry by `{FIX}`; do not edit by hand.
     `agenteval schema check` (run by CI) fails while this file differs from the models. -->

Every key a run can be configured with. The scenario pipeline reads `params.yaml` at the
repository root; each benchmark pipeline reads its own `pipelines/<kind>/params.yaml` with
the same sections. Override any key for one run with `agenteval run --set key=value` or
`dvc exp run -S key=value` (nested keys joined by dots: `target.params.top_k=8`). Unknown
keys and wrong types are refused before any work starts, naming the key.

A default is the value a key takes when the file leaves it out. Keys that hold credentials
hold the NAME of an environment variable (`api_key_env`), never the key itself.
"""


@dataclass(frozen=True)
class _Table:
    """One model's own keys; nested models get tables of their own."""

    key: str  # dotted address, e.g. "suite.split"; "run.prices.<model>" for a mapping value
    model: type[BaseModel]


def render_reference(params: type[BaseModel] = Params) -> str:
    """The whole page, deterministic for a given set of models (`params`: Params with the
    registered benchmarks' sections, agenteval.benchmarks.base.params_model)."""
    out = [HEADER]
    for name, field in params.model_fields.items():
        model = _model(field.annotation)
        assert model is not None, f"params section {name} is not a model"
        out.append("\n".join(_tables(_Table(name, model), level=2)))
    return "\n".join(out).rstrip("\n") + "\n"


def stale_reference(path: Path = REFERENCE, params: type[BaseModel] = Params) -> bool:
    return not path.is_file() or path.read_text(encoding="utf-8") != render_reference(params)


def write_reference(path: Path = REFERENCE, params: type[BaseModel] = Params) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_reference(params), encoding="utf-8")
    return path


def _tables(table: _Table, level: int) -> Iterator[str]:
    yield f"{'#' * level} `{table.key}`\n"
    doc = inspect.cleandoc(table.model.__doc__ or "")
    if doc:
        yield _prose(doc) + "\n"
    if table.model.model_config.get("extra") == "allow":
        yield "Keys not listed here are allowed and passed on as they are.\n"
    nested: list[_Table] = []
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, field in table.model.model_fields.items():
        key = f"{table.key}.{name}"
        inner = _model(field.annotation)
        if inner is not None:
            nested.append(_Table(key, inner))
            continue
        item = _container_model(field.annotation)
        shown = _type(field)
        optional = _optional_model(field.annotation)
        if optional is not None:  # a section that may be absent: its keys get a table
            nested.append(_Table(key, optional))
            shown = f"`{key}` (below) or null"
        if item is not None:
            nested.append(_Table(f"{key}{item[0]}", item[1]))
            kind = "list of" if item[0] == "[]" else "mapping of name to"
            shown = f"{kind} `{key}{item[0]}` (below)"
        rows.append(f"| `{key}` | {shown} | {_default(field)} | {_cell(field)} |")
    if len(rows) > 2:
        yield "\n".join(rows) + "\n"
    for inner_table in nested:
        yield from _tables(inner_table, level + 1)


def _model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _optional_model(annotation: Any) -> type[BaseModel] | None:
    """`Model | None`: the model, whose keys are documented under the field's own key."""
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return None
    models = [a for a in typing.get_args(annotation) if _model(a)]
    return models[0] if len(models) == 1 else None


def _container_model(annotation: Any) -> tuple[str, type[BaseModel]] | None:
    """A list or mapping of models: its items get a table (`key[]`, `key.<name>`)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list and args and _model(args[0]):
        return "[]", args[0]
    if origin is dict and len(args) == 2 and _model(args[1]):
        return ".<name>", args[1]
    return None


def _type(field: FieldInfo) -> str:
    text = _type_name(field.annotation)
    limits = []
    for meta in field.metadata:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            if getattr(meta, attr, None) is not None:
                limits.append(f"{sign} {getattr(meta, attr)}")
        if getattr(meta, "min_length", None):
            limits.append("not empty")
        if getattr(meta, "pattern", None) == r"^[0-9a-f]{64}$":
            limits.append("64 hex characters")
    return _escape(text + (f", {', '.join(limits)}" if limits else ""))


def _type_name(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return "one of " + ", ".join(f"`{value}`" for value in args)
    if origin in (typing.Union, types.UnionType):
        text = " or ".join(_type_name(arg) for arg in args if arg is not type(None))
        return f"{text} or null" if type(None) in args else text
    if origin is list:
        if args and typing.get_origin(args[0]) is Literal:
            return "list of any of " + ", ".join(f"`{value}`" for value in typing.get_args(args[0]))
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        if not args or args[1] is Any:
            return "mapping"
        keys = args[0]
        key_name = "name" if keys is str else _type_name(keys)
        if typing.get_origin(keys) is Literal:
            key_name = "/".join(str(value) for value in typing.get_args(keys))
        return f"mapping of {key_name} to {_type_name(args[1])}"
    if annotation is Any:
        return "any"
    return str(getattr(annotation, "__name__", annotation))


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, list) and value and isinstance(value[0], BaseModel):
        value = [item.model_dump(mode="json") for item in value]
    if isinstance(value, str):
        return f"`{_escape(value)}`"
    return f"`{_escape(json.dumps(value, ensure_ascii=False))}`"


def _cell(field: FieldInfo) -> str:
    return _escape(_prose(field.description or ""))


def _prose(text: str) -> str:
    """One line; `<` outside code spans escaped, or `<repository root>` would be read as an
    HTML tag and dropped by the renderer."""
    parts = " ".join(text.split()).split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def _escape(text: str) -> str:
    """A table cell: a pipe would end the cell, even inside a code span."""
    return text.replace("|", "\\|")
