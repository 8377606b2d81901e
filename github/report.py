"""A sync's report as lines of text: the command's output and the cockpit's view."""

from __future__ import annotations

from github.sync import ACTION_UPDATE, SyncReport


def _value(value) -> str:
    if value is None:
        return "(empty)"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def report_lines(report: SyncReport, *, dry_run: bool) -> list[str]:
    would = "would write" if report.mode != "read_write" or dry_run else "to write"
    lines = [
        f'{report.board} "{report.title}" for {report.release}: {report.items_read} items read, '
        f"{report.exception_items} with an exception, in {report.requests} GraphQL requests.",
    ]
    changed = [plan for plan in report.plans if plan.changes or plan.action != ACTION_UPDATE]
    if not changed:
        lines.append("Nothing to write: the board holds releasecal's record.")
    for plan in changed:
        where = plan.item if plan.action == ACTION_UPDATE else f"{plan.action} for KEP-{plan.kep}"
        lines.append(f"KEP-{plan.kep} {plan.type} (request #{plan.request_id}, {plan.state}): {would} on {where}")
        for change in plan.changes:
            lines.append(f"    {change.field}: {_value(change.before)} -> {_value(change.after)}")
    for link in report.links:
        lines.append(f"{'would link' if dry_run else 'linked'}: {link}")
    for problem in report.problems:
        lines.append(f"problem: {problem}")
    return lines
