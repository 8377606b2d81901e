"""GitHub's published descriptions, loaded once per process from the pinned npm packages
(package.json: ``@octokit/graphql-schema``, ``@octokit/openapi``,
``@octokit/webhooks-schemas``; ``npm ci`` installs them under node_modules/).

- GraphQL: ``schema.json`` (the introspection result) through graphql-core's
  ``build_client_schema``; the SDL (``schema.graphql``) defines one field twice, which
  graphql-core 3.3 refuses when it validates, hence 3.2.x and the JSON.
- REST: ``api.github.com.json`` (OpenAPI 3.0.3) through openapi-core, servers replaced by
  the two prefixes the fake serves (``/`` as api.github.com, ``/api/v3`` as GitHub
  Enterprise Server, which django-allauth calls when ``GITHUB_URL`` is set).
- Webhooks: the self-contained JSON Schema (draft-07) of every event, through jsonschema.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT

NODE_MODULES = ROOT / "node_modules" / "@octokit"
GRAPHQL_SCHEMA_JSON = NODE_MODULES / "graphql-schema" / "schema.json"
OPENAPI_JSON = NODE_MODULES / "openapi" / "generated" / "api.github.com.json"
WEBHOOKS_SCHEMA_JSON = NODE_MODULES / "webhooks-schemas" / "schema.json"


class SchemaMissing(RuntimeError):
    """A pinned description is not installed (run ``make node_modules/.installed``)."""


def _read(path: Path) -> Any:
    if not path.exists():
        raise SchemaMissing(f"{path} is missing: run `make node_modules/.installed` (npm ci)")
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def package_version(name: str) -> str:
    """The installed version of ``@octokit/<name>``."""
    return _read(NODE_MODULES / name / "package.json")["version"]


@functools.cache
def graphql_schema():
    """GitHub's GraphQL schema (a graphql-core ``GraphQLSchema``), built once."""
    from graphql import build_client_schema

    data = _read(GRAPHQL_SCHEMA_JSON)
    return build_client_schema(data.get("data", data))


@functools.cache
def openapi():
    """GitHub's REST description as an openapi-core ``OpenAPI`` (its own validation of the
    13 MB document is skipped: 18 s, and the package is GitHub's published one)."""
    from openapi_core import Config, OpenAPI

    spec = _read(OPENAPI_JSON)
    spec["servers"] = [{"url": "/"}, {"url": "/api/v3"}]
    _nullable_alternatives(spec)
    return OpenAPI.from_dict(spec, config=Config(spec_validator_cls=None))


def _nullable_alternatives(node: Any) -> None:
    """OpenAPI 3.0.3 lets ``nullable: true`` stand beside ``oneOf``/``anyOf`` (GitHub's
    ``"milestone": {"oneOf": [string, integer], "nullable": true}``) and beside ``enum``
    (``state_reason``); the validator checks null against each alternative or the enum and
    refuses it. A null alternative (and null in the enum) says the same."""
    if isinstance(node, dict):
        if node.get("nullable") is True and isinstance(node.get("enum"), list) and None not in node["enum"]:
            node["enum"].append(None)
        if node.get("nullable") is True and "type" not in node:
            for key in ("oneOf", "anyOf"):
                if isinstance(node.get(key), list) and {"enum": [None]} not in node[key]:
                    node[key].append({"enum": [None]})
        for value in node.values():
            _nullable_alternatives(value)
    elif isinstance(node, list):
        for value in node:
            _nullable_alternatives(value)


@functools.cache
def webhook_schema() -> dict:
    return _read(WEBHOOKS_SCHEMA_JSON)


@functools.cache
def webhook_validator(event: str, action: str):
    """A jsonschema validator of one event's payload (``issues`` + ``labeled`` validates
    against ``#/definitions/issues$labeled``)."""
    import jsonschema

    root = webhook_schema()
    name = f"{event}${action}"
    if name not in root["definitions"]:
        raise KeyError(f"@octokit/webhooks-schemas has no {name} event")
    schema = {"$ref": f"#/definitions/{name}", "definitions": root["definitions"]}
    cls = jsonschema.validators.validator_for(root)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)
