"""Every regex literal of the project's code (``re.<fn>(r"...")``), timed on long runs of
each of a set of characters and fragments: a pattern whose time grows faster than its
input (4x the text, about 16x the time: quadratic) is printed. One command, no Django:

    .venv/bin/python bench/regex_scan.py [N]     # N: the shorter text's length, 1000

Patterns built from f-strings or concatenations are not read (literals only), and a
pattern timed alone misses what its caller does around it. So the second mode times the
thread reader's entry points (what ``POST /api/v1/exceptions/parse/``, ``ingest_exception``
and the mailbox call: ``read_thread``) on whole hostile texts of 10k, 40k and 160k
characters, and exits 1 when one grows super-linearly (over 8x the time for 4x the text,
both steps, past 0.2 s; linear is 4x, quadratic 16x):

    .venv/bin/python bench/regex_scan.py --reader
"""

from __future__ import annotations

import ast
import contextlib
import itertools
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


# The reader's entry points, and the starts of the hostile texts (each followed by a run of
# one unit): nothing, an mbox "From " line, a template's days line, a message's mark.
READER_PREFIXES = {
    "": "",
    "mbox": "From ",
    "days": "* Additional time needed (in days): 3 until ",
    "template": "* Enhancement name: x\n* SIG: node\n* Reason this enhancement is critical for this milestone: ",
    "amend": "* Additional time needed (in days): 3\nUpdating the time requested to ",
    "mark": "[Jane Doe]\n\n",
}
READER_UNITS = [
    *UNITS,
    "From ",
    "From: a\n",
    "Date: x\n",
    "[A B]\n",
    "A B\nunread,\n",
    "unread,\n",
    "to a\n",
    "on behalf of ",
    "until ",
    "by ",
    "exception request for ",
    "approved ",
    "Thanks,\nA B\n",
    "\n\n",
    "> > ",
    "7",
    "multipart ",
]
READER_SIZES = (10_000, 40_000, 160_000)


def _reader_entry_point():
    sys.path.insert(0, str(ROOT))
    from exceptions.reader import read_thread
    from releasecal.errors import DomainError

    def thread(text: str) -> None:
        with contextlib.suppress(DomainError):  # a clear refusal is an answer too
            read_thread(text)

    return thread


def _time(function, text: str) -> float:
    """Processor time of the call: other work on a loaded machine does not inflate it (the
    wall clock made a linear case look super-linear at a load average of 10)."""
    start = time.thread_time()
    function(text)
    return time.thread_time() - start


def reader_main() -> int:
    """``read_thread`` (every face's entry: the parse endpoint, ``ingest_exception``, the
    mailbox) on each hostile text at 10k and 40k characters; at 160k too when 40k took
    over 20 ms or grew over 6x (a linear case below that cannot reach 0.2 s at 160k)."""
    import os

    read = _reader_entry_point()
    small, middle, large = READER_SIZES
    print(f"read_thread on hostile texts of {small:,}, {middle:,} and {large:,} characters")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    failures = cases = 0
    slowest = (0.0, "")
    for label, prefix in READER_PREFIXES.items():
        for unit in READER_UNITS:
            cases += 1

            def text(n: int, prefix=prefix, unit=unit) -> str:
                return prefix + (unit * (n // len(unit) + 1))[: n - len(prefix)]

            times = [_time(read, text(small)), _time(read, text(middle))]
            if times[1] > 0.02 or times[1] / max(times[0], 1e-6) > 6:
                times.append(min(_time(read, text(large)), _time(read, text(large))))
            ratios = [b / max(a, 1e-6) for a, b in itertools.pairwise(times)]
            case = f"{label or '-'}+{unit!r}"
            slowest = max(slowest, (times[-1] * (4 if len(times) == 2 else 1), case))
            if len(times) == 3 and times[-1] > 0.2 and min(ratios) > 8:
                failures += 1
                shown = " -> ".join(f"{t:.3f}s" for t in times)
                print(f"SUPER-LINEAR {case}: {shown} ({' '.join(f'{r:.1f}x' for r in ratios)})")
    print(f"{cases} texts; slowest at {large:,} (or 4x its 40k time): {slowest[0]:.3f}s ({slowest[1]})")
    print("done" if not failures else f"{failures} super-linear")
    return 1 if failures else 0


if __name__ == "__main__":
    if "--reader" in sys.argv:
        sys.exit(reader_main())
    main()
