"""The ``/relcal`` slash command: answers from the database in one short request.

Subcommands: ``next``, ``next <kind>``, ``kep <n>``, ``release <slug>``,
``exceptions pending``, ``tz <zone>``, ``request [KEP]`` (opens the filing modal,
``slack_integration.modal``), ``link`` (self-service account linking), ``help``. Answers are Block Kit and ephemeral
(only the caller sees them). Every deadline sentence is rendered by ``releasecal.tz``;
when the caller has set a zone with ``tz``, it is shown in that zone too.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse

from exceptions.models import ExceptionRequest
from exceptions.selectors import deadlines_next
from releasecal import selectors, tz
from releasecal.errors import DomainError
from releasecal.models import Enhancement, MilestoneKind, Release, Tracking
from slack_integration import linking, modal, services
from slack_integration.blocks import request_line
from slack_integration.models import SlackIdentity
from slack_integration.mrkdwn import MAX_BLOCKS, clip, context, escape, header, section
from slack_integration.selectors import slack_identity_find
from slack_integration.signature import slack_id, slack_signed

HELP = "\n".join(
    [
        "*/relcal* answers from the release calendar:",
        "• `/relcal next` the next deadlines of the active releases",
        "• `/relcal next code-freeze` the next deadline of one kind",
        "• `/relcal kep 1880` a KEP: its deadlines (extensions applied) and exception requests",
        "• `/relcal release 1.31` a release's schedule",
        "• `/relcal exceptions pending` requests waiting for a decision",
        "• `/relcal tz Europe/Berlin` also show times in your zone (remembered)",
        "• `/relcal request 1880` file an exception request for a KEP (opens a form)",
        "• `/relcal link` link your Slack account to your releasecal account",
        "• `/relcal help` this message",
    ]
)
MAX_ROWS = 20


def reply(text: str, blocks: list[dict] | None = None) -> dict:
    """An ephemeral answer. ``text`` is mrkdwn in which every value from outside our
    code has gone through ``escape``."""
    return {"response_type": "ephemeral", "text": clip(text), "blocks": (blocks or [section(text)])[:MAX_BLOCKS]}


def _when(instant, zone: str, viewer: str | None, *, deadline: bool = True) -> str:
    """A deadline (worded as people say it) or, with ``deadline=False``, another instant."""
    text = escape(tz.render_deadline(instant, zone) if deadline else tz.render(instant, zone))
    if viewer and tz.normalize_zone_name(viewer) not in {tz.normalize_zone_name(zone), "UTC"}:
        mine = tz.render_deadline_in_zone(instant, viewer) if deadline else tz.render_in_zone(instant, viewer)
        text += f"\n      _your time: {escape(mine)}_"
    return text


def _milestone_when(milestone, viewer: str | None) -> str:
    if milestone.is_all_day:
        return escape(milestone.display()) + " (all day)"
    return _when(milestone.at, milestone.zone, viewer)


def cmd_help(args: list[str], identity: SlackIdentity | None) -> dict:
    return reply(HELP)


def cmd_next(args: list[str], identity: SlackIdentity | None) -> dict:
    viewer = identity.zone if identity else None
    releases = list(selectors.release_list_active())
    if not releases:
        return reply("No active release.")
    kind = "-".join(args).lower() if args else ""
    if kind and not MilestoneKind.objects.filter(slug=kind).exists():
        kinds = ", ".join(f"`{escape(k)}`" for k in MilestoneKind.objects.values_list("slug", flat=True))
        return reply(f"No milestone kind `{escape(kind)}`. Known kinds: {kinds}.")
    rows = deadlines_next(releases=releases, enhancements=None, now=tz.utc_now(), limit=200)
    if kind:
        rows = [row for row in rows if row.milestone.kind.slug == kind]
    rows = rows[: 1 if kind else 5]
    if not rows:
        return reply(f"No upcoming {escape(kind or 'deadline')} in the active releases.")
    lines = [
        f"*{escape(row.milestone.title)}* ({escape(row.milestone.release.slug)}): "
        f"{_milestone_when(row.milestone, viewer)}"
        for row in rows
    ]
    title = f"Next {kind}" if kind else "Next deadlines"
    return reply(
        f"{escape(title)}\n" + "\n".join(lines), [header(title), section("\n".join(lines)), _zone_hint(identity)]
    )


def _zone_hint(identity: SlackIdentity | None) -> dict:
    if identity and identity.zone:
        return context(f"Also shown in your zone, {escape(identity.zone)}. Change it with `/relcal tz &lt;zone&gt;`.")
    return context("Tip: `/relcal tz Europe/Berlin` also shows every time in your zone.")


def cmd_kep(args: list[str], identity: SlackIdentity | None) -> dict:
    viewer = identity.zone if identity else None
    number = modal.kep_number(args[0]) if args else None
    if number is None:
        return reply("Usage: `/relcal kep 1880`")
    enhancement = Enhancement.objects.filter(number=number).first()
    if enhancement is None:
        return reply(f"No KEP {number} is known.")
    tracked = list(
        Tracking.objects.filter(enhancement=enhancement).select_related("release", "enhancement", "missed_freeze")
    )
    lines = [f"SIG {escape(enhancement.owning_sig)}"] + [
        f"{escape(t.release.slug)}: {t.get_stage_display().lower()}, {t.get_status_display().lower()}" for t in tracked
    ]
    blocks = [header(f"KEP-{number}: {enhancement.title}"), section("\n".join(lines))]
    current = [t for t in tracked if t.release.status != Release.Status.RELEASED]
    # Removed or deferred: that release's deadlines are not the KEP's (deadlines_next leaves them out).
    blocks += [context(escape(t.out_of_milestone_text())) for t in current if t.out_of_milestone]
    releases = [t.release for t in current]
    rows = deadlines_next(releases=releases, enhancements=[enhancement], now=tz.utc_now(), limit=5)
    if rows:
        deadline_lines = []
        for row in rows:
            when = _when(row.instant, row.zone, viewer) if row.is_extension else _milestone_when(row.milestone, viewer)
            suffix = f" _(extended by exception #{row.exception_id})_" if row.is_extension else ""
            deadline_lines.append(
                f"*{escape(row.milestone.title)}* ({escape(row.milestone.release.slug)}): {when}{suffix}"
            )
        blocks.append(section("*Next deadlines*\n" + "\n".join(deadline_lines)))
    requests = list(
        ExceptionRequest.objects.filter(enhancement=enhancement)
        .select_related("release", "milestone", "decision")
        .order_by("-submitted_at")[:MAX_ROWS]
    )
    if requests:
        request_lines = [request_line(r, lambda at, zone: _when(at, zone, viewer), with_kep=False) for r in requests]
        blocks.append(section("*Exception requests*\n" + "\n".join(request_lines)))
    else:
        blocks.append(context("No exception requests."))
    return reply(f"KEP-{number}: {escape(enhancement.title)}", blocks)


def cmd_release(args: list[str], identity: SlackIdentity | None) -> dict:
    viewer = identity.zone if identity else None
    if not args:
        slugs = ", ".join(f"`{escape(r.slug)}`" for r in selectors.release_list_active()) or "none"
        return reply(f"Usage: `/relcal release 1.31`. Active releases: {slugs}.")
    release = Release.objects.filter(slug=args[0]).first()
    if release is None:
        return reply(f"No release `{escape(args[0])}`.")
    now = tz.utc_now()
    lines = []
    for milestone in selectors.milestone_list(release=release):
        title = escape(milestone.title)
        line = f"*{title}*: {_milestone_when(milestone, viewer)}"
        state = milestone.state_at(now)
        if state == "cancelled":
            line = f"~{title}~ (cancelled)"
        elif state in ("passed", "closed"):
            line = f"{title}: {_milestone_when(milestone, None)} ({state})"
        elif state == "in_effect":
            line += " (in effect now)"
        lines.append(line)
    chunks, current = [], ""
    for line in lines:  # Slack sections hold 3000 characters
        if len(current) + len(line) > 2800:
            chunks.append(current)
            current = ""
        current += line + "\n"
    chunks.append(current or "No milestones yet.")
    blocks = [header(f"{release.name} ({release.get_status_display().lower()}, {release.zone})")]
    blocks += [section(chunk) for chunk in chunks[:45]]
    blocks.append(_zone_hint(identity))
    return reply(f"{escape(release.name)} schedule", blocks)


def cmd_exceptions(args: list[str], identity: SlackIdentity | None) -> dict:
    if [a.lower() for a in args] != ["pending"]:
        return reply("Usage: `/relcal exceptions pending`")
    pending = list(
        ExceptionRequest.objects.filter(state=ExceptionRequest.State.PENDING)
        .select_related("release", "milestone", "enhancement", "requester")
        .order_by("submitted_at")[:MAX_ROWS]
    )
    if not pending:
        return reply("No exception request is waiting for a decision.")
    viewer = identity.zone if identity else None
    lines = [
        f"#{r.pk} KEP-{r.enhancement.number} {escape(r.enhancement.title)}: {escape(r.milestone.title)} "
        f"({escape(r.release.slug)}), {r.days} days, by {escape(r.requester_label)}, "
        f"sent {_when(r.submitted_at, r.release.zone, viewer, deadline=False)}"
        for r in pending
    ]
    return reply("Pending exception requests", [header("Pending exception requests"), section("\n".join(lines))])


def cmd_tz(args: list[str], identity: SlackIdentity | None, *, slack_user_id: str, team_id: str) -> dict:
    if not args:
        current = escape(identity.zone) if identity and identity.zone else "not set"
        return reply(f"Your zone: {current}. Set it with `/relcal tz Europe/Berlin`.")
    try:
        saved = services.slack_identity_set_zone(slack_user_id=slack_user_id, team_id=team_id, zone=" ".join(args))
    except DomainError as exc:
        return reply(escape(exc.message))
    now = escape(tz.render_in_zone(tz.utc_now(), saved.zone))
    return reply(f"Saved: times are also shown in {escape(saved.zone)} (now {now}).")


def cmd_link(identity: SlackIdentity | None, *, slack_user_id: str, team_id: str) -> dict:
    if identity is not None and identity.user is not None:
        return reply(f"Your Slack account is linked to the releasecal account {escape(identity.user.get_username())}.")
    return reply(linking.not_linked_sentence(slack_user_id=slack_user_id, team_id=team_id, doing="file requests"))


COMMANDS = {
    "help": cmd_help,
    "next": cmd_next,
    "kep": cmd_kep,
    "release": cmd_release,
    "exceptions": cmd_exceptions,
}


def relcal(text: str, *, slack_user_id: str, team_id: str = "", trigger_id: str = "") -> dict | None:
    """The answer to ``/relcal <text>`` for one Slack user; None when a modal was opened
    (``request``: Slack then wants an empty 200)."""
    words = text.split()
    name, args = (words[0].lower(), words[1:]) if words else ("help", [])
    # help and an unknown subcommand answer the same text to everyone: no lookup, no query.
    if name == "help":
        return cmd_help(args, None)
    if name not in COMMANDS and name not in ("request", "link", "tz"):
        return reply(f"Unknown subcommand `{clip(escape(name), 40)}`.\n\n{HELP}")
    identity = slack_identity_find(slack_user_id=slack_user_id, team_id=team_id)
    if name == "request":
        problem = modal.open_request_modal(
            args=args, slack_user_id=slack_user_id, team_id=team_id, trigger_id=trigger_id
        )
        return reply(problem) if problem else None
    if name == "link":
        return cmd_link(identity, slack_user_id=slack_user_id, team_id=team_id)
    if name == "tz":
        return cmd_tz(args, identity, slack_user_id=slack_user_id, team_id=team_id)
    return COMMANDS[name](args, identity)


@slack_signed
def commands(request: HttpRequest, form: dict[str, str]) -> JsonResponse:
    user_id, team_id = slack_id(form.get("user_id")), slack_id(form.get("team_id"))
    if not user_id or (form.get("team_id") and not team_id):
        return JsonResponse({"message": "Not a slash command payload (user_id, team_id).", "extra": {}}, status=400)
    answer = relcal(form.get("text", ""), slack_user_id=user_id, team_id=team_id, trigger_id=form.get("trigger_id", ""))
    return JsonResponse(answer) if answer is not None else HttpResponse(status=200)
