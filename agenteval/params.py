"""params.yaml: the one place a run is configured. Sections are contracts with DVC stages."""

from __future__ import annotations

import copy
import importlib.util
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agenteval.fileio import digest_of
from agenteval.schema.located import Located, load_located
from agenteval.schema.params import BuiltinKnobs, Params

SECTIONS = tuple(Params.model_fields)
DEFAULT_TARGET_MODEL = Params().target.model

# The embedded offline default: runs with no network and no keys. The typed models in
# agenteval.schema.params are the one home of every key and default; a benchmark's own
# section is its Settings model, composed onto Params by the caller that runs it
# (agenteval.benchmarks.base.params_model) and handed to the loader as `model`.
DEFAULTS: dict[str, Any] = Params().model_dump(mode="json", exclude_none=True)


def defaults_of(model: type[Params]) -> dict[str, Any]:
    """The embedded defaults of `model` (DEFAULTS for Params itself)."""
    return DEFAULTS if model is Params else model().model_dump(mode="json", exclude_none=True)


class ParamsError(ValueError):
    pass


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def apply_overrides(
    params: Mapping[str, Any], assignments: Iterable[str], model: type[Params] = Params
) -> dict[str, Any]:
    """Apply `a.b.c=value` overrides; the value is read as a YAML scalar (8, 0.5, true, [x])."""
    result = copy.deepcopy(dict(params))
    for assignment in assignments:
        key, sep, raw = assignment.partition("=")
        if not sep or not key.strip():
            raise ParamsError(f"--set expects key=value, got {assignment!r}")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise ParamsError(
                f"--set {key.strip()}: not a YAML value ({getattr(exc, 'problem', exc)})"
            ) from None
        set_value(result, key.strip(), value, f"--set {key.strip()}", model)
    return result


def set_value(
    params: dict[str, Any], key: str, value: Any, label: str, model: type[Params] = Params
) -> None:
    """Put a typed `value` at dotted `key`: what an option gives goes in as the value it is,
    never through YAML text (a quote in a model name cannot add keys)."""
    parts = key.split(".")
    sections = tuple(model.model_fields)
    if parts[0] not in sections:
        raise ParamsError(f"{label}: unknown section {parts[0]!r} ({', '.join(sections)})")
    node = params
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ParamsError(f"{label}: {part!r} is not a mapping")
        node = child
    node[parts[-1]] = copy.deepcopy(value)


def load_params(
    path: Path | None = None,
    overrides: Iterable[str] = (),
    options: Mapping[str, tuple[str, Any]] | None = None,
    model: type[Params] = Params,
) -> dict[str, Any]:
    """Defaults, then params.yaml (if present), then --set overrides, then command options
    (`{dotted key: (option name, typed value)}`); checked against the typed `model` (Params,
    or Params with the sections of the benchmarks that run) before anything runs, so a wrong
    key or type names itself (or its option) and exits 2."""
    params = copy.deepcopy(defaults_of(model))
    located: Located | None = None
    if path is not None and path.exists():
        loaded = load_located(path)
        if not isinstance(loaded, Located):
            raise ParamsError(str(loaded))
        located = loaded
        if not isinstance(located.data or {}, dict):
            raise ParamsError(f"{path}:1: params must be a mapping of sections")
        params = deep_merge(params, located.data or {})
    assignments = list(overrides)
    params = apply_overrides(params, assignments, model)
    named = dict(options or {})
    for key, (option, value) in named.items():
        set_value(params, key, value, option, model)
    keys = [a.partition("=")[0].strip() for a in assignments]
    check_params(params, located, keys, {k: option for k, (option, _) in named.items()}, model)
    return params


def check_params(
    params: Mapping[str, Any],
    located: Located | None = None,
    set_keys: Iterable[str] = (),
    options: Mapping[str, str] | None = None,
    typed: type[Params] = Params,
) -> None:
    """Raise ParamsError listing every wrong key or value, each where it was written (a
    file's line, `--set key`, or the option of `options`: {dotted key: option name})."""
    keys = list(set_keys)
    try:
        model = typed.model_validate(params)
    except ValidationError as exc:
        errors = [(tuple(e["loc"]), _what(e, typed)) for e in exc.errors()]
    else:
        knobs = ", ".join(BuiltinKnobs.model_fields)
        errors = [
            (("target", "params", k), f"unknown key (builtin knobs: {knobs})")
            for k in sorted(_builtin_extras(model))
        ]
        errors += _missing_packages(model) + _endpoint_gaps(model)
    if errors:
        lines = [_where(loc, located, keys, options or {}) + what for loc, what in errors]
        raise ParamsError("\n".join(lines))


def _missing_packages(model: Params) -> list[tuple[tuple[Any, ...], str]]:
    # Looked up, never imported: Ray takes seconds to import and the check runs on every load.
    if model.run.executor == "ray" and importlib.util.find_spec("ray") is None:
        return [(("run", "executor"), "ray is not installed here: pip install -e '.[ray]'")]
    return []


# The roles that call a model endpoint, by kind: each needs a model and a base_url the user
# named (the target's default model names the builtin agent, never an endpoint's model).
ENDPOINT_KINDS = {"target": ("chat",), "simulator": ("llm",), "judge": ("llm", "hybrid")}


def _endpoint_gaps(model: Params) -> list[tuple[tuple[Any, ...], str]]:
    gaps: list[tuple[tuple[Any, ...], str]] = []
    for role, kinds in ENDPOINT_KINDS.items():
        section = getattr(model, role)
        if section.kind not in kinds or section.model is section.base_url is None:
            continue  # named by nothing: the command that builds it refuses (llm.config)
        if not section.base_url:
            why = f"required for {role}.kind {section.kind} (no default host: name it)"
            gaps.append(((role, "base_url"), why))
        if not section.model or (role == "target" and section.model == DEFAULT_TARGET_MODEL):
            why = f"required for {role}.kind {section.kind}: the model the endpoint serves"
            gaps.append(((role, "model"), why))
    return gaps


# Where the units run, not what they measure: left out of the params digest, so a run on a
# Ray cluster and the same run in one process carry one configuration (and one scorecard).
PLACEMENT_KEYS = {"run": ("executor", "ray")}


def without_placement(params: Mapping[str, Any]) -> dict[str, Any]:
    """`params` without the keys that only say where units run (PLACEMENT_KEYS)."""
    kept = dict(params)
    for section, keys in PLACEMENT_KEYS.items():
        if isinstance(kept.get(section), Mapping):
            kept[section] = {k: v for k, v in kept[section].items() if k not in keys}
    return kept


def _builtin_extras(model: Params) -> list[str]:
    # The builtin agent has no request fields: anything beyond its knobs is a typo.
    return list(model.target.params.model_extra or {}) if model.target.kind == "builtin" else []


def _dotted(loc: Iterable[Any]) -> str:
    return ".".join(str(part) for part in loc if part != "[key]")


def _where(
    loc: tuple[Any, ...], located: Located | None, set_keys: list[str], options: Mapping[str, str]
) -> str:
    name = _dotted(loc)
    for key, option in options.items():
        if name == key or name.startswith(key + "."):
            return f"{option}: {name}: "
    for key in set_keys:
        if name == key:
            return f"--set {key}: "
        if name.startswith(key + ".") or key.startswith(name + "."):
            return f"--set {key}: {name}: "
    if located is not None:
        return f"{located.path}:{located.line([p for p in loc if p != '[key]'])}: {name}: "
    return f"{name}: "


# pydantic error types -> the expected type, as a person would say it.
EXPECTED = {
    "int_parsing": "an integer",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_parsing": "a number",
    "float_type": "a number",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def _what(err: Any, typed: type[Params] = Params) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"unknown key (known: {', '.join(_known(err['loc'][:-1], typed))})"
    if kind in EXPECTED:
        return f"expected {EXPECTED[kind]}, got {err.get('input')!r}"
    if isinstance(err.get("input"), Mapping):  # a whole section: its message says what
        return str(err["msg"])
    return f"{err['msg']} (got {err.get('input')!r})"


def _known(loc: tuple[Any, ...], typed: type[Params] = Params) -> list[str]:
    """Field names of the section at `loc`, for 'did you mean' lists."""
    model: Any = typed
    for part in loc:
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return []
        model = field.annotation
    return sorted(getattr(model, "model_fields", {}))


def section_digest(params: Mapping[str, Any], *sections: str) -> str:
    return digest_of({name: params.get(name) for name in sections or SECTIONS})


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{'a': {'b': 1}} -> {'a.b': 1}; lists stay values."""
    if not isinstance(value, Mapping):
        return {prefix: value}
    flat: dict[str, Any] = {}
    for key, child in value.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(child, Mapping) and child:
            flat.update(flatten(child, name))
        else:
            flat[name] = child
    return flat
