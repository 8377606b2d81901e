"""Importing the whole Kubernetes history: every release README, 1.10 to 1.37.

    .venv/bin/python bench/import_bench.py [--readmes ../shared/data/k8s-readmes] [--rounds 5]
                                           [--database-url postgres://.../EMPTY_DB]

1. Migrates a throwaway SQLite file (or --database-url, an EMPTY database).
2. Times, side by side:
   - reading all the READMEs (``schedule_parse_many``: tables, summaries, years), no database;
   - the first import (``schedule_import``, one transaction: releases, milestones, audit log);
   - a re-import of the same files (everything unchanged: nothing written).
   Reading is the median of --rounds; the imports run once each (the first only once).
3. Prints the milestone and warning counts, the warnings by kind, and each time's ratio
   to the reading alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readmes", default=str(ROOT.parent / "shared" / "data" / "k8s-readmes"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--database-url", help="an EMPTY database (default: a throwaway SQLite file)")
    args = parser.parse_args()
    readmes = sorted(Path(args.readmes).glob("release-1.*.md"), key=lambda p: int(p.stem.split(".")[1]))
    if not readmes:
        sys.exit(f"No release-1.XX.md files in {args.readmes}.")
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["DATABASE_URL"] = args.database_url or f"sqlite:///{Path(scratch) / 'bench.sqlite3'}"
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
        sys.path.insert(0, str(ROOT))
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", interactive=False, verbosity=0)

        from releasecal.importers.schedule import schedule_import, schedule_parse_many
        from releasecal.models import Milestone

        if Milestone.objects.exists():
            sys.exit("The database is not empty: give an EMPTY one (the first import must create everything).")
        sources = [(str(p), p.read_text()) for p in readmes]
        rows = sum(text.count("\n|") + text.count("<tr>") for _name, text in sources)
        reads = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            parsed = schedule_parse_many(sources)
            reads.append(time.perf_counter() - started)
        read = statistics.median(reads)
        started = time.perf_counter()
        first = schedule_import(paths=readmes)
        first_time = time.perf_counter() - started
        started = time.perf_counter()
        again = schedule_import(paths=readmes)
        again_time = time.perf_counter() - started

    milestones = sum(len(spec.milestones) for _name, p in parsed for spec in p.releases)
    print(f"{len(readmes)} READMEs, about {rows} table lines, {milestones} milestones, {len(first.warnings)} warnings")
    print(f"database: {'given' if args.database_url else 'SQLite (throwaway)'}")
    print(f"{'':28} {'seconds':>8} {'x reading':>10}")
    print(f"{f'reading (median of {args.rounds})':28} {read:8.3f} {1:10.1f}")
    print(f"{'first import (1 transaction)':28} {first_time:8.3f} {first_time / read:10.1f}")
    print(f"{'re-import (nothing changes)':28} {again_time:8.3f} {again_time / read:10.1f}")
    print(f"created {first.created}; re-import: {again.created} created, {again.updated} updated, "
          f"{again.unchanged} unchanged")  # fmt: skip
    print("warnings by kind: " + ", ".join(f"{kind} {n}" for kind, n in first.warnings_by_kind().items()))


if __name__ == "__main__":
    main()
