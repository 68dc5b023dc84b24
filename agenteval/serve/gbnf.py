"""JSON Schema to a GBNF grammar, so the local model can only write JSON the schema accepts.

llama.cpp constrains decoding with GBNF grammars (`name ::= expression` rules over quoted
literals, character classes and repetitions). The LLM judge asks for OpenAI's structured
output, `response_format: {"type": "json_schema", "json_schema": {"schema": ...}}`; the
local server turns that schema into a grammar here.

The subset is what OpenAI's strict mode allows and this project sends: objects whose
properties are listed (required ones first, in order), arrays with `items`, strings, numbers,
integers, booleans, null, `enum`, `const`, `anyOf`/`oneOf` and type lists. A keyword that
would constrain the output and is not supported (`pattern`, `minimum`, ...) is refused with
its path, never ignored: an ignored constraint would let through output the client then
rejects, and the request would look like the model's fault.

Whitespace between tokens is bounded (one blank or a newline and up to 20 indenting
characters) and numbers have at most 16 digits per part, so a small model cannot loop on
blanks or digits until `max_tokens` runs out.
"""

from __future__ import annotations

import json
import re
from typing import Any

PRIMITIVES = {
    "space": '| " " | "\\n" [ \\t]{0,20}',
    "char": '[^"\\\\\\x7F\\x00-\\x1F] | [\\\\] (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    "string": '"\\"" char* "\\"" space',
    "integral": '"0" | [1-9] [0-9]{0,15}',
    "number": '"-"? integral ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})? space',
    "integer": '"-"? integral space',
    "boolean": '("true" | "false") space',
    "null": '"null" space',
    "value": "object | array | string | number | boolean | null",
    "object": '"{" space (string ":" space value ("," space string ":" space value)*)? "}" space',
    "array": '"[" space (value ("," space value)*)? "]" space',
}
SCALAR_TYPES = ("string", "number", "integer", "boolean", "null")
# Keywords that describe rather than constrain: accepted and ignored.
ANNOTATIONS = frozenset(
    {"title", "description", "$schema", "$id", "default", "examples", "$comment", "strict"}
)
HANDLED = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "const"}
    | {"anyOf", "oneOf"}
)


class UnsupportedSchema(ValueError):
    """The schema uses a keyword or shape the grammar cannot express; names where."""


def literal(value: Any) -> str:
    """A GBNF literal matching the compact JSON spelling of `value`."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Converter:
    def __init__(self) -> None:
        self.rules: dict[str, str] = {}

    def add(self, name: str, expression: str) -> str:
        base = re.sub(r"[^a-zA-Z0-9-]+", "-", name).strip("-") or "rule"
        candidate, n = base, 1
        while candidate in self.rules or candidate in PRIMITIVES:
            n += 1
            candidate = f"{base}-{n}"
        self.rules[candidate] = expression
        return candidate

    def visit(self, schema: Any, path: str) -> str:
        if schema is True or schema == {}:
            return "value"
        if not isinstance(schema, dict):
            raise UnsupportedSchema(f"{path}: a schema must be an object, got {schema!r}")
        unknown = sorted(set(schema) - HANDLED - ANNOTATIONS)
        if unknown:
            raise UnsupportedSchema(f"{path}: unsupported JSON Schema keyword {unknown[0]!r}")
        name = path.replace(".", "-")
        if "const" in schema:
            return self.add(name, f"{literal(schema['const'])} space")
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise UnsupportedSchema(f"{path}.enum: must be a non-empty list")
            return self.add(name, f"({' | '.join(literal(v) for v in values)}) space")
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self.alternatives(schema[key], f"{path}.{key}")
        kind = schema.get("type")
        if isinstance(kind, list):
            rest = {k: v for k, v in schema.items() if k != "type"}
            return self.alternatives([{**rest, "type": t} for t in kind], path)
        if kind == "object" or (kind is None and "properties" in schema):
            return self.object(schema, path)
        if kind == "array" or (kind is None and "items" in schema):
            return self.array(schema, path)
        if kind in SCALAR_TYPES:
            return str(kind)
        if kind is None:
            return "value"
        raise UnsupportedSchema(f"{path}.type: unsupported type {kind!r}")

    def alternatives(self, options: Any, path: str) -> str:
        if not isinstance(options, list) or not options:
            raise UnsupportedSchema(f"{path}: must be a non-empty list of schemas")
        rules = [self.visit(option, f"{path}.{i}") for i, option in enumerate(options)]
        return self.add(path.replace(".", "-"), " | ".join(rules))

    def object(self, schema: dict[str, Any], path: str) -> str:
        properties = schema.get("properties") or {}
        if not properties:
            if schema.get("additionalProperties") is False:
                return self.add(path, '"{" space "}" space')
            return "object"
        if schema.get("additionalProperties", False) is not False:
            raise UnsupportedSchema(
                f"{path}.additionalProperties: only false is supported beside properties"
            )
        required = schema.get("required") or []
        if not isinstance(required, list) or set(required) - set(properties):
            raise UnsupportedSchema(f"{path}.required: must list names from properties")
        pairs = {
            key: f'{literal(key)} space ":" space {self.visit(sub, f"{path}.{key}")}'
            for key, sub in properties.items()
        }
        firsts = [key for key in properties if key in required]
        optional = [key for key in properties if key not in required]
        if not firsts:
            raise UnsupportedSchema(f"{path}.required: an object needs a required property")
        body = ' "," space '.join(pairs[key] for key in firsts)
        body += "".join(f' ("," space {pairs[key]})?' for key in optional)
        return self.add(path, f'"{{" space {body} "}}" space')

    def array(self, schema: dict[str, Any], path: str) -> str:
        item = self.visit(schema.get("items", {}), f"{path}.items")
        return self.add(path, f'"[" space ({item} ("," space {item})*)? "]" space')


def schema_to_grammar(schema: Any) -> str:
    """The GBNF grammar (root rule `root`) of the JSON documents `schema` accepts."""
    converter = _Converter()
    top = converter.visit(schema, "root")
    rules = {"root": converter.rules.pop("root", top), **converter.rules}
    return "\n".join(f"{name} ::= {body}" for name, body in {**rules, **PRIMITIVES}.items())


def response_format_grammar(response_format: Any) -> str | None:
    """The grammar an OpenAI `response_format` asks for; None for plain text.

    Accepts `{"type": "text"}`, `{"type": "json_object"}` (any JSON object, or the
    llama.cpp form with a `schema` beside the type) and `{"type": "json_schema",
    "json_schema": {"schema": ...}}`. Anything else raises UnsupportedSchema.
    """
    if response_format is None:
        return None
    if not isinstance(response_format, dict):
        raise UnsupportedSchema("response_format: must be an object")
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        schema = response_format.get("schema")
        return schema_to_grammar(schema if schema is not None else {"type": "object"})
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        if not isinstance(spec, dict) or "schema" not in spec:
            raise UnsupportedSchema("response_format.json_schema.schema: required")
        return schema_to_grammar(spec["schema"])
    raise UnsupportedSchema(f"response_format.type: unsupported value {kind!r}")
