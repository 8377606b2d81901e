"""Every regex literal of the project's code (``re.<fn>(r"...")``), timed on long runs of
each of a set of characters and fragments: a pattern whose time grows faster than its
input (4x the text, about 16x the time: quadratic) is printed. One command, no Django:

    .venv/bin/python bench/regex_scan.py [N]     # N: the shorter text's length, 1000

Patterns built from f-strings or concatenations are not read (literals only).
"""

from __future__ import annotations

import ast
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = {".venv", "node_modules", "tests", "migrations", "bench", "mutants"}
CALLS = {"compile", "search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split"}
FLAGS = {"I", "M", "S", "X", "A", "IGNORECASE", "MULTILINE", "DOTALL", "VERBOSE", "ASCII"}
# Characters and fragments repeated to make the hostile texts (emails, README tables, names).
UNITS = [
    " ",
    "\n",
    "\t",
    " \n",
    "\r\n",
    "-",
    " -",
    "- ",
    "[",
    "(",
    "[a](",
    "a",
    "a ",
    "aa.",
    "1",
    "1 ",
    ":",
    " :",
    "a:",
    ".",
    "/",
    "#",
    ">",
    "> ",
    "*",
    "_",
    "`",
    "<",
    "=",
    ",",
    "'",
    '"',
    "0-",
    "1.",
    "1:",
    "v1.",
    "sig-",
    "KEP-",
    "https://",
    "http://a/",
    "a@",
    "@",
    "days ",
    " days",
    "1 day ",
    "PR ",
    "#1 ",
    "19:00 ",
    "2024-",
    "Jul ",
    "AM ",
    "PST ",
    "UTC ",
    "AoE ",
    "end of day ",
    "on ",
    "wrote ",
    "re: ",
    "Re: ",
    "-- ",
    "via ",
    " via",
    "| ",
    "|-",
    "---|",
    "<a@b>",
    "a <",
    "(a",
    "1)",
]


def _is_re_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "re"
        and node.func.attr in CALLS
        and bool(node.args)
    )


def _flags(nodes: list[ast.AST]) -> int:
    value = 0
    for node in nodes:
        for n in ast.walk(node):
            is_re = isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "re"
            if is_re and n.attr in FLAGS:
                value |= getattr(re, n.attr)
    return value


def literals() -> list[tuple[str, str, int]]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if SKIP & set(path.relative_to(ROOT).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not _is_re_call(node):
                continue
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue  # an f-string or a concatenation
            flags = _flags(node.args[1:] + [k.value for k in node.keywords if k.arg == "flags"])
            found.append((f"{path.relative_to(ROOT)}:{node.lineno}", first.value, flags))
    return found


def cost(pattern: re.Pattern, n: int, unit: str) -> float:
    text = (unit * (n // len(unit) + 1))[:n]
    worst = 0.0
    for variant in (text, "x" + text + "!"):
        start = time.perf_counter()
        for _ in pattern.finditer(variant):
            pass
        worst = max(worst, time.perf_counter() - start)
    return worst


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    found = literals()
    print(f"{len(found)} regex literals; time on {n} characters, then on {4 * n}")
    for where, source, flags in found:
        pattern = re.compile(source, flags)
        small, unit = max((cost(pattern, n, unit), unit) for unit in UNITS)
        if small > 0.001:
            big = cost(pattern, 4 * n, unit)
            print(f"{small:7.3f}s -> {big:7.3f}s ({big / small:4.1f}x) {unit!r:10} {where}: {source[:100]!r}")
    print("done")


if __name__ == "__main__":
    main()
