"""Reading import files: JSON or YAML text, with one clear message per problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from releasecal.errors import ValidationFailed


class ImportFailed(ValidationFailed):
    """The file cannot be imported; ``errors`` lists every problem found."""

    def __init__(self, message: str, *, errors: list[str] | None = None):
        self.errors = errors or []
        self.head = message
        full = message if not self.errors else message + "\n" + "\n".join(f"  - {e}" for e in self.errors)
        super().__init__(full, extra={"errors": self.errors})


# ---------------------------------------------------------------------- loading


class _Loader(yaml.SafeLoader):
    """YAML without surprises: ``1.30`` stays the string "1.30" (not the float 1.3) and
    dates and times stay text, parsed by us in the right zone."""


_Loader.add_constructor("tag:yaml.org,2002:float", lambda loader, node: loader.construct_scalar(node))
_Loader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))


def load_data(text: str, *, source: str = "input") -> Any:
    """Parse JSON or YAML text; a syntax error becomes one clear message."""
    source = f"{source}: not" if source else "Not"
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ImportFailed(f"{source} valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from None
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ImportFailed(f"{source} valid YAML{where}: {problem}.") from None


def read_file(path: str | Path) -> str:
    path = Path(path)
    if not path.exists():
        raise ImportFailed(f"{path}: no such file.")
    if path.is_dir():
        raise ImportFailed(f"{path}: is a directory, not a file.")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ImportFailed(f"{path}: not UTF-8 text.") from None
    except OSError as exc:
        raise ImportFailed(f"{path}: cannot be read ({exc.strerror}).") from None


def as_text(value: Any) -> str:
    """A scalar from a parsed file as stripped text ("" for a missing value)."""
    return "" if value is None else str(value).strip()
