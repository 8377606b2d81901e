"""Admin for exception requests: triage, sign-offs and decisions.

A request is never edited through a raw ModelForm. Filing, amending, signing off,
withdrawing, approving and rejecting each have a small form whose only job is to parse
input and call one function of ``exceptions.services``; a DomainError from the service
(Conflict, NotAllowed, PolicyViolation) is shown as an admin error message.
"""

from __future__ import annotations

import datetime as dt
import json
import re

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from exceptions.followup import (
    REMOVED_LABEL,
    can_change_liaison,
    exception_grant_reevaluate,
    exception_request_liaison_set,
    tracked_label,
)
from exceptions.models import (
    UNRECORDED_GRANT,
    Decision,
    ExceptionRequest,
    ExceptionRequestRevision,
    GrantEnd,
    ProposedDecision,
    days_label,
)
from exceptions.selectors import decision_text, grant_conflicts, kep_effective_deadline, request_deadlines
from exceptions.services import (
    COMBINED_FREEZES,
    DECIDE_PERMISSION,
    RequestFields,
    default_granted_until,
    exception_decision_correct,
    exception_decision_reopen,
    exception_request_amend,
    exception_request_approve,
    exception_request_reject,
    exception_request_signoff,
    exception_request_submit,
    exception_request_withdraw,
    grant_warnings,
    proposed_decision_confirm,
    proposed_decision_dismiss,
    request_warnings,
    request_window_closes,
    request_window_text,
    sig_docs_day,
)
from releasecal import admin as schedule_admin
from releasecal import tz
from releasecal.admin import PlainActionCheckbox, SigFilter, WallTimeField, ZoneInput, parse_wall_into
from releasecal.errors import Conflict, DomainError, NotAllowed
from releasecal.models import AuditLog, Enhancement, Milestone, Release, Tracking

CHANGE_PERMISSION = "exceptions.change_exceptionrequest"
SIGNOFF_PERMISSION = "exceptions.add_signoff"


def _pr_urls(text: str) -> list[str]:
    return [line.strip() for line in re.split(r"[\s,]+", text or "") if line.strip()]


class _TemplateFieldsForm(forms.Form):
    """The fields of the Kubernetes request template, shared by filing and amending."""

    days = forms.IntegerField(min_value=1, label="Additional days needed")
    until_text = forms.CharField(required=False, max_length=200, label="Until (as written)")
    until_zone = ZoneInput(required=False, label="Until zone")
    stage = forms.ChoiceField(choices=[("", "---------"), *Tracking.Stage.choices], required=False)
    sig = forms.CharField(required=False, max_length=64, label="SIG")
    issue_url = forms.URLField(required=False, max_length=500, label="Enhancements issue")
    pr_urls = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), label="PRs (one per line)")
    reason = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), label="Why is it critical")
    risks_adding = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), label="Risks of adding")
    risks_cutting = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), label="Risks of cutting")


def request_fields(data: dict, *, enhancement_name: str) -> RequestFields:
    """The service's dataclass from a cleaned template form."""
    return RequestFields(
        days=data["days"],
        enhancement_name=enhancement_name,
        stage=data["stage"],
        sig=data["sig"],
        issue_url=data["issue_url"],
        pr_urls=_pr_urls(data["pr_urls"]),
        until_text=data["until_text"],
        until_zone=data["until_zone"],
        reason=data["reason"],
        risks_adding=data["risks_adding"],
        risks_cutting=data["risks_cutting"],
    )


class SubmitForm(forms.ModelForm):
    """The add page: files a request through ``exception_request_submit``.

    The service runs in ``clean()`` so a policy refusal becomes a form error on the same
    page (the admin wraps the whole view in one transaction); ``save_model`` then has
    nothing left to write.
    """

    requester = forms.ModelChoiceField(
        queryset=get_user_model().objects.order_by("username"),
        required=False,
        help_text="A user, or leave empty and give the name from the email. The requester cannot decide it.",
    )
    requester_name = forms.CharField(required=False, max_length=200, help_text="As written in the email")
    submitted_at = WallTimeField(
        label="Sent at (wall time in the release zone)",
        help_text="When the request was sent; empty means now. The request window is checked against it.",
    )
    days = _TemplateFieldsForm.base_fields["days"]
    until_text = _TemplateFieldsForm.base_fields["until_text"]
    until_zone = _TemplateFieldsForm.base_fields["until_zone"]
    stage = _TemplateFieldsForm.base_fields["stage"]
    sig = _TemplateFieldsForm.base_fields["sig"]
    issue_url = _TemplateFieldsForm.base_fields["issue_url"]
    pr_urls = _TemplateFieldsForm.base_fields["pr_urls"]
    reason = _TemplateFieldsForm.base_fields["reason"]
    risks_adding = _TemplateFieldsForm.base_fields["risks_adding"]
    risks_cutting = _TemplateFieldsForm.base_fields["risks_cutting"]

    class Meta:
        model = ExceptionRequest
        fields = ["enhancement", "milestone", "also_milestone"]

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        if "milestone" in self.fields:  # absent on the read-only view page
            self.fields["milestone"].queryset = (
                Milestone.objects.filter(kind__allows_exceptions=True, cancelled=False)
                .select_related("release")
                .order_by("-release__start_date", "closes_at", "id")
            )
        if "also_milestone" in self.fields:
            self.fields["also_milestone"].queryset = (
                Milestone.objects.filter(kind__slug__in=COMBINED_FREEZES, cancelled=False)
                .select_related("release")
                .order_by("-release__start_date", "closes_at", "id")
            )
            self.fields["also_milestone"].label = "Also the freeze"
            self.fields[
                "also_milestone"
            ].help_text = (
                "A PRR freeze request may also name its release's enhancements freeze, with one completion date."
            )

    def clean(self):
        cleaned = super().clean()
        enhancement: Enhancement | None = cleaned.get("enhancement")
        milestone: Milestone | None = cleaned.get("milestone")
        if enhancement is None or milestone is None or self.errors:
            return cleaned
        parse_wall_into(self, "submitted_at", milestone.release.zone)
        if not cleaned.get("requester") and not cleaned.get("requester_name"):
            self.add_error("requester_name", "Name the requester: pick a user or write the name from the email.")
        if self.errors:
            return cleaned
        try:
            self.instance = exception_request_submit(
                enhancement=enhancement,
                milestone=milestone,
                fields=request_fields(cleaned, enhancement_name=enhancement.title),
                requester=cleaned.get("requester"),
                requester_name=cleaned.get("requester_name") or "",
                submitted_at=cleaned.get("submitted_at"),
                entered_by=self.user,
                also_milestone=cleaned.get("also_milestone"),
            )
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from exc
        return cleaned


class GrantForm(forms.Form):
    """A granted deadline, entered in the words it is shown in (``tz.render_deadline``):
    the day it closes on, and a clock time only when it is not the end of that day. The
    default "end of Sunday 13 December 2026 AoE" is pre-filled as day 2026-12-13 with no
    time, never as "2026-12-14 00:00" (the same instant read as another day)."""

    granted_day = forms.CharField(
        label="Granted until (day)",
        max_length=40,
        widget=forms.TextInput(attrs={"size": 12, "placeholder": "YYYY-MM-DD"}),
        help_text="The last day of the extension, in the zone below (the release zone if empty).",
    )
    granted_time = forms.CharField(
        required=False,
        label="Time on that day",
        max_length=40,
        widget=forms.TextInput(attrs={"size": 12, "placeholder": "end of day"}),
        help_text="Empty: the end of that day. Or a wall time, HH:MM (18:00).",
    )
    zone = ZoneInput(required=False, label="Zone", help_text="Optional: another IANA zone or AoE.")

    def __init__(self, *args, zone: str, initial_grant: dt.datetime | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.release_zone = zone
        self.fields["zone"].widget.attrs["placeholder"] = zone
        if initial_grant is not None:
            shown = tz.deadline_input(initial_grant, zone)
            self.fields["granted_day"].initial = shown.day
            self.fields["granted_time"].initial = shown.time

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            cleaned["granted_until"] = tz.parse_deadline_input(
                cleaned["granted_day"], cleaned["granted_time"], cleaned.get("zone") or self.release_zone,
                field="granted until",
            )  # fmt: skip
        except DomainError as exc:
            self.add_error("granted_time" if cleaned["granted_time"].strip() else "granted_day", exc.message)
        return cleaned


class ApproveForm(GrantForm):
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}))

    def __init__(self, *args, exception_request: ExceptionRequest, **kwargs):
        self.exception_request = exception_request
        self.default = default_granted_until(exception_request)
        super().__init__(*args, zone=exception_request.release.zone, initial_grant=self.default, **kwargs)

    @property
    def default_display(self) -> str:
        return tz.render_deadline(self.default, self.release_zone)

    @property
    def default_help(self) -> str:
        request = self.exception_request
        if request.days == 0:
            return "An admission (0 days asked): granted until the freeze itself. Pre-filled below."
        freeze_day = tz.render_date(tz.deadline_day(request.milestone.deadline, self.release_zone))
        docs_day = sig_docs_day(request)
        if docs_day is not None:
            return (
                f"The freeze day ({freeze_day}) plus {days_label(request.days)} for the technical review, then "
                f"one business day for SIG Docs ({tz.render_date(docs_day)}), to the end of that day in "
                f"{self.release_zone}. A grant that ends earlier is warned about. Pre-filled below."
            )
        return (
            f"The freeze day ({freeze_day}) plus {days_label(request.days)}, to the end of that day in "
            f"{self.release_zone}. Pre-filled below."
        )


class NoteForm(forms.Form):
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}))


REASON_HELP = "Required: the clerical error this corrects (the wrong grant time, the wrong request decided)."


class CorrectForm(GrantForm):
    """A made decision corrected (``exception_decision_correct``): the outcome, the grant
    (pre-filled with the one in force, in the words it is shown in) and the note, with a
    required reason. The grant is read only for an approval."""

    outcome = forms.ChoiceField(choices=Decision.Outcome.choices)
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}))
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 60}), help_text=REASON_HELP)
    field_order = ["outcome", "granted_day", "granted_time", "zone", "note", "reason"]

    def __init__(self, *args, decision: Decision, release_zone: str, **kwargs):
        grant = decision.granted_until or None
        super().__init__(*args, zone=decision.granted_zone or release_zone, initial_grant=grant, **kwargs)
        self.fields["granted_day"].required = False
        self.fields["granted_day"].help_text = (
            "For an approval: the last day of the extension. Empty: the grant in force (a rejection corrected to an "
            "approval: the freeze plus the days asked)."
        )
        self.fields["outcome"].initial = decision.outcome
        self.fields["note"].initial = decision.note
        self.fields["zone"].initial = decision.granted_zone

    def clean(self):
        cleaned = forms.Form.clean(self)
        if self.errors:
            return cleaned
        cleaned["granted_until"] = None
        if cleaned["outcome"] == Decision.Outcome.APPROVED and cleaned["granted_day"].strip():
            try:
                cleaned["granted_until"] = tz.parse_deadline_input(
                    cleaned["granted_day"], cleaned["granted_time"], cleaned.get("zone") or self.release_zone,
                    field="granted until",
                )  # fmt: skip
            except DomainError as exc:
                self.add_error("granted_time" if cleaned["granted_time"].strip() else "granted_day", exc.message)
        return cleaned


class ReopenForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Required: why the decision is undone (it was made on the wrong request). "
        "The request is pending again, to be decided anew.",
    )


class LiaisonForm(forms.Form):
    liaison = forms.ModelChoiceField(queryset=None, help_text="A lead or team member of the request's release")

    def __init__(self, *args, exception_request: ExceptionRequest, **kwargs):
        super().__init__(*args, **kwargs)
        release = exception_request.release
        team = get_user_model().objects.filter(Q(led_releases=release) | Q(release_teams=release), is_active=True)
        self.fields["liaison"].queryset = team.distinct().order_by("username")
        self.fields["liaison"].initial = exception_request.liaison_id


class LiaisonFilter(admin.SimpleListFilter):
    """Requests by their liaison ("mine": the signed-in user's)."""

    title = "liaison"
    parameter_name = "liaison"

    def lookups(self, request, model_admin):
        people = get_user_model().objects.filter(liaison_requests__isnull=False).distinct().order_by("username")
        return [("me", "Mine"), ("none", "None"), *((str(u.pk), u.get_username()) for u in people)]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "me":
            return queryset.filter(liaison_id=request.user.pk)
        if value == "none":
            return queryset.filter(liaison__isnull=True)
        if value and value.isdigit():
            return queryset.filter(liaison_id=int(value))
        return queryset


class SignOffForm(NoteForm):
    role = forms.CharField(required=False, max_length=100, help_text='e.g. "SIG Node lead"')
    field_order = ["role", "note"]


class AmendForm(_TemplateFieldsForm):
    pass


def _json(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False) if value is not None else ""


def _revision_rows(revisions: list[ExceptionRequestRevision], zone: str) -> list[dict]:
    """Each revision with what changed since the previous one (days, until, ...)."""
    compared = ["days", "until_text", "until_zone", "stage", "sig", "pr_urls", "reason"]
    rows, previous = [], None
    for revision in revisions:
        changes = []
        if previous is not None:
            for name in compared:
                old, new = getattr(previous, name), getattr(revision, name)
                if old != new:
                    changes.append({"field": name, "old": old, "new": new})
        until_at = tz.render_deadline(revision.until_at, revision.until_zone or zone) if revision.until_at else ""
        rows.append(
            {"revision": revision, "changes": changes, "at": tz.render(revision.created_at, zone), "until_at": until_at}
        )
        previous = revision
    return rows


def decision_summary(obj: ExceptionRequest) -> dict:
    """What a release-team member reads before deciding, on the approve and reject forms
    (one request's page and the list actions alike): the request's facts, its answers
    (why, the risks of adding it late and of cutting it), its PRs, sign-offs and
    warnings. Each fact is a (label, value) pair the template puts in separate elements."""
    zone = obj.release.zone
    current = obj.current
    milestone = obj.milestone
    facts = [
        ("KEP", f"KEP-{obj.enhancement.number}: {obj.enhancement.title}"),
        ("Freeze", f"{milestone.title}: {milestone.display()}"),
        ("Days requested", days_label(obj.days)),
    ]
    if obj.also_milestone_id:
        also = obj.also_milestone
        facts.insert(2, ("Also the freeze", f"{also.title}: {also.display()} (one completion date for both)"))
    if current is not None and current.until_text:
        until = current.until_text
        if current.until_at:
            until += f" = {tz.render_deadline(current.until_at, current.until_zone or zone)}"
        facts.append(("Until (as written)", until))
    requester = obj.requester_label + (f" <{obj.requester_email}>" if obj.requester_email else "")
    facts += [
        ("Requester", requester),
        ("Submitted", tz.render(obj.submitted_at, zone)),
        ("State", obj.get_state_display()),
    ]
    if current is not None and (current.stage or current.sig):
        facts.append(("Stage / SIG", f"{current.get_stage_display() or '-'} / {current.sig or '-'}"))
    warnings = request_warnings(obj)
    closes = request_window_closes(milestone)
    if obj.submitted_at > closes:
        warnings.append(
            f"Filed after the request window closed ({tz.render_deadline(closes, zone)}, "
            f"{request_window_text(milestone)})."
        )
    found = kep_effective_deadline(enhancement=obj.enhancement, milestone=milestone)
    if found.warning:
        warnings.append(found.warning)
    for proposal in obj.proposed_decisions.filter(state=ProposedDecision.State.PROPOSED):
        warnings.extend(proposal.warnings)
    signoffs = [{"signoff": s, "at": tz.render(s.at, zone)} for s in obj.signoffs.order_by("at", "id")]
    return {
        "facts": facts,
        "answers": [
            ("Why is it critical", current.reason if current else ""),
            ("Risks of adding late", current.risks_adding if current else ""),
            ("Risks of cutting", current.risks_cutting if current else ""),
        ],
        "issue_url": current.issue_url if current else "",
        "pr_urls": list(current.pr_urls) if current else [],
        "signoffs": signoffs,
        "warnings": warnings,
    }


def _granted_shown(decision: Decision | None) -> str:
    if decision is None or decision.outcome != Decision.Outcome.APPROVED:
        return ""
    if decision.granted_until is None:
        return UNRECORDED_GRANT
    return tz.render_deadline(decision.granted_until, decision.granted_zone)


class MilestoneFilter(admin.SimpleListFilter):
    """The milestones that have requests, named with their release, in one query
    (Django's RelatedOnlyFieldListFilter names each through a query of its own)."""

    title = "milestone"
    parameter_name = "milestone__id__exact"

    def lookups(self, request, model_admin):
        milestones = (
            Milestone.objects.filter(Exists(ExceptionRequest.objects.filter(milestone=OuterRef("pk"))))
            .select_related("release")
            .order_by("release__start_date", "closes_at", "id")
        )
        return [(str(m.pk), str(m)) for m in milestones]

    def queryset(self, request, queryset):
        if self.value():
            try:
                return queryset.filter(milestone_id=self.value())
            except (ValueError, ValidationError) as exc:  # ?milestone__id__exact=abc: the admin's "?e=1"
                raise IncorrectLookupParameters(exc) from exc
        return queryset


class WaitingFilter(admin.SimpleListFilter):
    """Pending requests that need attention by time: waiting over a day, or whose request
    window closes within 24 hours (more requests may still come for that freeze)."""

    title = "waiting"
    parameter_name = "waiting"

    def lookups(self, request, model_admin):
        return [("day", "Waiting longer than a day"), ("closing", "Window closing in 24 h")]

    def queryset(self, request, queryset):
        now = tz.utc_now()
        pending = queryset.filter(state=ExceptionRequest.State.PENDING)
        if self.value() == "day":
            # Waiting counts from receipt (a thread from the archive has not waited since it was sent).
            since = Coalesce("received_at", "submitted_at")
            return pending.alias(since=since).filter(since__lt=now - dt.timedelta(days=1))
        if self.value() == "closing":
            freezes = (
                Milestone.objects.filter(
                    kind__allows_exceptions=True,
                    cancelled=False,
                    exception_requests__state=ExceptionRequest.State.PENDING,
                )
                .select_related("release", "kind")
                .distinct()
            )
            closing = [m.pk for m in freezes if now <= request_window_closes(m) <= now + dt.timedelta(hours=24)]
            return pending.filter(milestone__in=closing)
        return queryset


@admin.register(ExceptionRequest)
class ExceptionRequestAdmin(PlainActionCheckbox, admin.ModelAdmin):
    form = SubmitForm
    list_display = [
        "id", "kep", "milestone", "days", "state", "liaison", "submitted", "waited", "window_closes", "signoff_count",
        "deadline",
    ]  # fmt: skip
    list_display_links = ["id", "kep"]
    list_filter = ["state", WaitingFilter, "release", MilestoneFilter, SigFilter, LiaisonFilter]
    search_fields = ["enhancement__number__exact", "enhancement__title", "revisions__enhancement_name"]
    search_help_text = "KEP number (2400 or KEP-2400) or name"
    # milestone__kind: each row's request window is its kind's (request_window_closes).
    list_select_related = [
        *("enhancement", "milestone", "milestone__release", "milestone__kind", "release", "decision"),
        *("liaison", "also_milestone"),
    ]
    autocomplete_fields = ["enhancement"]  # thousands of KEPs: searched, not listed
    actions = ["approve_selected", "reject_selected"]
    shown_fields = [
        "kep",
        "release",
        "milestone",
        "state",
        "days",
        "requester_shown",
        "liaison",
        "slack_thread_link",
        "board_item_link",
        "submitted",
        "freeze",
        "deadline",
        "warnings_shown",
    ]
    add_fieldsets = [
        (
            None,
            {"fields": ["enhancement", "milestone", "also_milestone", "requester", "requester_name", "submitted_at"]},
        ),
        (
            "The request template",
            {
                "fields": [
                    "days",
                    "until_text",
                    "until_zone",
                    "stage",
                    "sig",
                    "issue_url",
                    "pr_urls",
                    "reason",
                    "risks_adding",
                    "risks_cutting",
                ]
            },
        ),
    ]

    # ------------------------------------------------------------------ permissions

    def has_decide_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(DECIDE_PERMISSION)

    def has_change_permission(self, request, obj=None):
        # Changes go through the services (buttons and actions), never the raw form.
        return False

    def has_delete_permission(self, request, obj=None):
        # Requests are history: withdraw or reject instead.
        return request.user.is_superuser

    # ------------------------------------------------------------------ list

    @admin.display(description="KEP", ordering="enhancement__number")
    def kep(self, obj: ExceptionRequest) -> str:
        return f"KEP-{obj.enhancement.number}: {obj.enhancement.title}"

    @admin.display(description="Submitted (release zone)", ordering="submitted_at")
    def submitted(self, obj: ExceptionRequest) -> str:
        return tz.render_in_zone(obj.submitted_at, obj.release.zone)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(signoff_total=Count("signoffs", distinct=True))

    def get_changelist_instance(self, request):
        # Every row's effective deadline at once (not a query per row).
        changelist = super().get_changelist_instance(request)
        deadlines = request_deadlines(changelist.result_list)
        for row in changelist.result_list:
            row.effective_row = deadlines[row.pk]
        return changelist

    @admin.display(description="Waited")
    def waited(self, obj: ExceptionRequest) -> str:
        if obj.state != ExceptionRequest.State.PENDING:
            return "-"
        waited = tz.render_waited(tz.utc_now() - obj.waiting_since)
        return f"{waited} (from the archive)" if obj.from_archive else waited

    @admin.display(description="Request window closes")
    def window_closes(self, obj: ExceptionRequest) -> str:
        closes = request_window_closes(obj.milestone)
        shown = tz.render_deadline_in_zone(closes, obj.release.zone)
        return f"{shown} (filed after it)" if obj.submitted_at > closes else shown

    @admin.display(description="Sign-offs", ordering="signoff_total")
    def signoff_count(self, obj: ExceptionRequest) -> int:
        return obj.signoff_total

    @admin.display(description="Effective deadline")
    def deadline(self, obj: ExceptionRequest) -> str:
        found = getattr(obj, "effective_row", None) or kep_effective_deadline(
            enhancement=obj.enhancement, milestone=obj.milestone
        )
        text = found.display()
        if found.warning:
            return f"{text} ⚠ {found.warning}"
        return f"{text} (extension)" if found.is_extension else text

    @admin.display(description="Freeze")
    def freeze(self, obj: ExceptionRequest) -> str:
        if obj.also_milestone_id:
            return f"{obj.milestone.display()} + {obj.also_milestone.title}"
        return obj.milestone.display()

    @admin.display(description="Requester")
    def requester_shown(self, obj: ExceptionRequest) -> str:
        return obj.requester_label

    @admin.display(description="Slack thread")
    def slack_thread_link(self, obj: ExceptionRequest) -> str:
        return (
            format_html('<a href="{}">{}</a>', obj.slack_thread_url, obj.slack_thread_url)
            if obj.slack_thread_url
            else "-"
        )

    @admin.display(description="Board item")
    def board_item_link(self, obj: ExceptionRequest) -> str:
        return format_html('<a href="{}">{}</a>', obj.board_item_url, obj.board_item_url) if obj.board_item_url else "-"

    @admin.display(description="Warnings")
    def warnings_shown(self, obj: ExceptionRequest) -> str:
        return " ".join(obj.warnings) or "-"

    def get_search_results(self, request, queryset, search_term):
        # "KEP-2400", "kep 2400" and "#2400" all mean KEP number 2400.
        term = re.sub(r"(?i)^\s*(?:kep[-\s]?|#)(\d+)\s*$", r"\1", search_term or "")
        return super().get_search_results(request, queryset, term)

    # ------------------------------------------------------------------ add / view pages

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return self.add_fieldsets
        return [(None, {"fields": self.shown_fields})]

    def get_readonly_fields(self, request, obj=None):
        return self.shown_fields if obj is not None else []

    def get_form(self, request, obj=None, change=False, **kwargs):
        form_class = super().get_form(request, obj, change=change, **kwargs)
        user = request.user

        class BoundSubmitForm(form_class):
            def __init__(self, *args, **kw):
                super().__init__(*args, user=user, **kw)

        return BoundSubmitForm

    def save_model(self, request, obj, form, change):
        # Already written by exception_request_submit in SubmitForm.clean().
        if obj.pk is None:
            raise DomainError("The request was not filed.")

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, object_id)
        extra_context = extra_context or {}
        if obj is not None:
            extra_context.update(self._detail_context(request, obj))
        return super().change_view(request, object_id, form_url, extra_context)

    def _detail_context(self, request, obj: ExceptionRequest) -> dict:
        revisions = list(obj.revisions.select_related("created_by", "entered_by").order_by("number"))
        decision = getattr(obj, "decision", None)
        audit = list(
            AuditLog.objects.filter(object_type=obj._meta.label_lower, object_id=str(obj.pk)).order_by("at", "id")
        )
        pending = obj.state == ExceptionRequest.State.PENDING
        user = request.user
        found = kep_effective_deadline(enhancement=obj.enhancement, milestone=obj.milestone)
        return {
            "request_obj": obj,
            "current": revisions[-1] if revisions else None,
            "revision_rows": _revision_rows(revisions, obj.release.zone),
            "signoffs": [
                {"signoff": s, "at": tz.render(s.at, obj.release.zone)} for s in obj.signoffs.order_by("at", "id")
            ],
            "decision": decision,
            "decided_at": tz.render(decision.decided_at, obj.release.zone) if decision else "",
            "granted_until": _granted_shown(decision),
            "audit_rows": [
                {
                    "row": row,
                    "at": tz.render_in_zone(row.at, "UTC"),
                    "before": _json(row.before),
                    "after": _json(row.after),
                }
                for row in audit
            ],
            "warnings": request_warnings(obj),
            "effective_deadline": found.display(),
            "effective_is_extension": found.is_extension,
            "effective_warning": found.warning,
            "proposals": [
                {
                    "proposal": p,
                    "granted": tz.render_deadline(p.granted_until, p.granted_zone or obj.release.zone)
                    if p.granted_until
                    else "",
                    "sent_at": tz.render(p.sent_at, obj.release.zone) if p.sent_at else "",
                    "url": reverse("admin:exceptions_proposeddecision_change", args=[p.pk]),
                }
                for p in obj.proposed_decisions.order_by("-created_at")
            ],
            "entered_by": obj.entered_by.get_username() if obj.entered_by_id else "",
            "can_decide": pending and self.has_decide_permission(request),
            "can_correct": decision is not None and self.has_decide_permission(request),
            "corrections": [
                {
                    "correction": c,
                    "at": tz.render(c.at, obj.release.zone),
                    "before": decision_text(c.before, obj.release.zone),
                    "after": decision_text(c.after, obj.release.zone),
                }
                for c in obj.decision_corrections.order_by("number")
            ],
            "can_amend": pending and (user.has_perm(CHANGE_PERMISSION) or obj.requester_id == user.pk),
            "can_signoff": pending and user.has_perm(SIGNOFF_PERMISSION),
            "can_change_liaison": can_change_liaison(obj, user),
        }

    # ------------------------------------------------------------------ buttons

    def get_urls(self):
        wrap = self.admin_site.admin_view
        prefix = f"{self.opts.app_label}_{self.opts.model_name}"
        return [
            path("<path:object_id>/approve/", wrap(self.approve_view), name=f"{prefix}_approve"),
            path("<path:object_id>/reject/", wrap(self.reject_view), name=f"{prefix}_reject"),
            path("<path:object_id>/correct/", wrap(self.correct_view), name=f"{prefix}_correct"),
            path("<path:object_id>/reopen/", wrap(self.reopen_view), name=f"{prefix}_reopen"),
            path("<path:object_id>/amend/", wrap(self.amend_view), name=f"{prefix}_amend"),
            path("<path:object_id>/signoff/", wrap(self.signoff_view), name=f"{prefix}_signoff"),
            path("<path:object_id>/withdraw/", wrap(self.withdraw_view), name=f"{prefix}_withdraw"),
            path("<path:object_id>/liaison/", wrap(self.liaison_view), name=f"{prefix}_liaison"),
            path("<path:object_id>/reevaluate/", wrap(self.reevaluate_view), name=f"{prefix}_reevaluate"),
            *super().get_urls(),
        ]

    def _change_url(self, obj: ExceptionRequest) -> str:
        return reverse("admin:exceptions_exceptionrequest_change", args=[obj.pk])

    def _get_or_404(self, request, object_id) -> ExceptionRequest:
        obj = self.get_object(request, object_id)
        if obj is None or not self.has_view_permission(request, obj):
            raise PermissionDenied if obj is not None else self._not_found(object_id)
        return obj

    def _not_found(self, object_id):
        from django.http import Http404

        return Http404(f"No exception request {object_id!r}.")

    def _render(self, request, obj, *, title: str, items: list[dict], submit_label: str, extra=None) -> HttpResponse:
        for item in items:
            item["summary"] = decision_summary(item["obj"])
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": title,
            "items": items,
            "submit_label": submit_label,
            "original": obj,
            "change_url": self._change_url(obj) if obj is not None else None,
            "changelist_url": reverse("admin:exceptions_exceptionrequest_changelist"),
            **(extra or {}),
        }
        return TemplateResponse(request, "admin/exceptions/exceptionrequest/action_form.html", context)

    def _service_call(self, request, obj, call, success: str) -> HttpResponse | None:
        """Run one service call; on a DomainError show it and return None (or a redirect
        for a refusal or a state conflict, where the form cannot help)."""
        try:
            call()
        except (NotAllowed, Conflict) as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(self._change_url(obj))
        except DomainError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return None
        self.message_user(request, success, messages.SUCCESS)
        return HttpResponseRedirect(self._change_url(obj))

    def _approve(self, request, obj: ExceptionRequest, data: dict) -> DomainError | None:
        """Approve one request with its ApproveForm's data and say so; the refusal, if any.
        The one path of the change page's Approve and the bulk action."""
        try:
            decision = exception_request_approve(
                request=obj,
                actor=request.user,
                granted_until=data["granted_until"],
                granted_zone=data["zone"] or None,
                note=data["note"],
            )
        except DomainError as exc:
            return exc
        shown = tz.render_deadline(decision.granted_until, decision.granted_zone)
        self.message_user(request, f"Approved {obj}: granted until {shown}.", messages.SUCCESS)
        for warning in grant_warnings(obj, decision.granted_until):
            self.message_user(request, warning, messages.WARNING)
        return None

    def approve_view(self, request, object_id):
        obj = self._get_or_404(request, object_id)
        if not self.has_decide_permission(request):
            raise PermissionDenied
        form = ApproveForm(request.POST if request.method == "POST" else None, exception_request=obj)
        if request.method == "POST" and form.is_valid():
            refused = self._approve(request, obj, form.cleaned_data)
            if refused is None:
                return HttpResponseRedirect(self._change_url(obj))
            self.message_user(request, refused.message, messages.ERROR)
            if isinstance(refused, NotAllowed | Conflict):
                return HttpResponseRedirect(self._change_url(obj))
        return self._render(
            request,
            obj,
            title=f"Approve {obj}",
            items=[{"obj": obj, "form": form, "default": form.default_display, "default_help": form.default_help}],
            submit_label="Approve",
        )

    def _form_view(self, request, obj, form, call, *, done: str, verb: str) -> HttpResponse:
        """One form, one service call: a valid POST runs ``call(cleaned_data)`` and goes back
        to the request; a GET, an invalid form or a refusal the form can fix shows the form."""
        if request.method == "POST" and form.is_valid():
            response = self._service_call(request, obj, lambda: call(form.cleaned_data), done)
            if response is not None:
                return response
        return self._render(request, obj, title=f"{verb} {obj}", items=[{"obj": obj, "form": form}], submit_label=verb)

    def reject_view(self, request, object_id):
        obj = self._get_or_404(request, object_id)
        if not self.has_decide_permission(request):
            raise PermissionDenied
        form = NoteForm(request.POST if request.method == "POST" else None)
        return self._form_view(
            request,
            obj,
            form,
            lambda data: exception_request_reject(request=obj, actor=request.user, note=data["note"]),
            done=f"Rejected {obj}.",
            verb="Reject",
        )

    def _decision_or_back(self, request, obj: ExceptionRequest) -> Decision | HttpResponse:
        if not self.has_decide_permission(request):
            raise PermissionDenied
        decision = Decision.objects.filter(request=obj).first()
        if decision is None:
            self.message_user(request, f"{obj} has no decision to correct ({obj.state}).", messages.ERROR)
            return HttpResponseRedirect(self._change_url(obj))
        return decision

    def correct_view(self, request, object_id):
        obj = self._get_or_404(request, object_id)
        decision = self._decision_or_back(request, obj)
        if isinstance(decision, HttpResponse):
            return decision
        form = CorrectForm(
            request.POST if request.method == "POST" else None, decision=decision, release_zone=obj.release.zone
        )
        return self._form_view(
            request,
            obj,
            form,
            lambda data: exception_decision_correct(
                request=obj,
                actor=request.user,
                reason=data["reason"],
                outcome=data["outcome"],
                granted_until=data["granted_until"],
                granted_zone=data["zone"] or None,
                note=data["note"],
            ),
            done=f"Corrected the decision on {obj}; the correction is kept in its history.",
            verb="Correct the decision on",
        )

    def reopen_view(self, request, object_id):
        obj = self._get_or_404(request, object_id)
        decision = self._decision_or_back(request, obj)
        if isinstance(decision, HttpResponse):
            return decision
        form = ReopenForm(request.POST if request.method == "POST" else None)
        return self._form_view(
            request,
            obj,
            form,
            lambda data: exception_decision_reopen(request=obj, actor=request.user, reason=data["reason"]),
            done=f"Reopened {obj}: it is pending again.",
            verb="Reopen",
        )

    def amend_view(self, request, object_id):
        obj = self._get_or_404(request, object_id)
        current = obj.current
        initial = {
            "days": obj.days,
            "until_text": current.until_text,
            "until_zone": current.until_zone,
            "stage": current.stage,
            "sig": current.sig,
            "issue_url": current.issue_url,
            "pr_urls": "\n".join(current.pr_urls),
            "reason": current.reason,
            "risks_adding": current.risks_adding,
            "risks_cutting": current.risks_cutting,
        }
        form = AmendForm(request.POST if request.method == "POST" else None, initial=initial)
        return self._form_view(
            request,
            obj,
            form,
            lambda data: exception_request_amend(
                request=obj,
                fields=request_fields(data, enhancement_name=current.enhancement_name),
                actor=request.user,
            ),
            done=f"Amended {obj}: a new revision was recorded.",
            verb="Amend",
        )

    def liaison_view(self, request, object_id):
        obj = self._get_or_404(request, object_id)
        if not can_change_liaison(obj, request.user):
            raise PermissionDenied
        form = LiaisonForm(request.POST if request.method == "POST" else None, exception_request=obj)
        return self._form_view(
            request,
            obj,
            form,
            lambda data: exception_request_liaison_set(request=obj, liaison=data["liaison"], actor=request.user),
            done=f"Changed the liaison of {obj}.",
            verb="Change the liaison of",
        )

    def reevaluate_view(self, request, object_id):
        """The cockpit's one-click outcomes of an ended grant (POST: grant_end, outcome)."""
        obj = self._get_or_404(request, object_id)
        if request.method != "POST":
            return HttpResponseRedirect(reverse("admin:index") + "#grant-ends")
        grant_end_id = str(request.POST.get("grant_end", ""))
        grant_end = (
            GrantEnd.objects.filter(pk=int(grant_end_id), request=obj).first() if grant_end_id.isdigit() else None
        )
        if grant_end is None:
            self.message_user(request, f"{obj} has no ended grant to re-evaluate.", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:index") + "#grant-ends")
        try:
            done = exception_grant_reevaluate(
                grant_end=grant_end, outcome=request.POST.get("outcome", ""), actor=request.user
            )
        except DomainError as exc:
            self.message_user(request, exc.message, messages.ERROR)
        else:
            shown = tracked_label(obj) if done.outcome == GrantEnd.Outcome.TRACKED else REMOVED_LABEL
            self.message_user(request, f"KEP-{obj.enhancement.number}: {shown}.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:index") + "#grant-ends")

    def signoff_view(self, request, object_id):
        obj = self._get_or_404(request, object_id)
        if not request.user.has_perm(SIGNOFF_PERMISSION):
            raise PermissionDenied
        form = SignOffForm(request.POST if request.method == "POST" else None)
        return self._form_view(
            request,
            obj,
            form,
            lambda data: exception_request_signoff(
                request=obj, author=request.user, role=data["role"], note=data["note"]
            ),
            done=f"Signed off {obj}.",
            verb="Sign off",
        )

    def withdraw_view(self, request, object_id):
        obj = self._get_or_404(request, object_id)
        form = NoteForm(request.POST if request.method == "POST" else None)
        return self._form_view(
            request,
            obj,
            form,
            lambda data: exception_request_withdraw(request=obj, actor=request.user, note=data["note"]),
            done=f"Withdrew {obj}.",
            verb="Withdraw",
        )

    # ------------------------------------------------------------------ list actions

    def _pending_only(self, request, queryset: QuerySet) -> list[ExceptionRequest]:
        chosen = list(queryset.select_related("release", "milestone", "enhancement").order_by("id"))
        for obj in chosen:
            if obj.state != ExceptionRequest.State.PENDING:
                self.message_user(request, f"Skipped {obj}: it is already {obj.state}.", messages.WARNING)
        return [obj for obj in chosen if obj.state == ExceptionRequest.State.PENDING]

    def _action_page(
        self, request, *, action: str, title: str, items, submit_label: str, ids, shared_form=None
    ) -> HttpResponse:
        return self._render(
            request,
            None,
            title=title,
            items=items,
            submit_label=submit_label,
            extra={
                "action": action,
                "selected_ids": ids,
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
                "shared_form": shared_form,
            },
        )

    @admin.action(description="Approve selected requests…", permissions=["decide"])
    def approve_selected(self, request, queryset):
        pending = self._pending_only(request, queryset) if "apply" not in request.POST else list(queryset)
        applying = "apply" in request.POST
        items = [
            {
                "obj": obj,
                "form": ApproveForm(request.POST if applying else None, exception_request=obj, prefix=f"r{obj.pk}"),
            }
            for obj in pending
        ]
        for item in items:
            item["default"] = item["form"].default_display
            item["default_help"] = item["form"].default_help
        if not items:
            return None
        if applying and all(item["form"].is_valid() for item in items):
            for item in items:
                refused = self._approve(request, item["obj"], item["form"].cleaned_data)
                if refused is not None:
                    self.message_user(request, f"{item['obj']}: {refused.message}", messages.ERROR)
            return None
        return self._action_page(
            request,
            action="approve_selected",
            title="Approve exception requests",
            items=items,
            submit_label="Approve",
            ids=[item["obj"].pk for item in items],
        )

    @admin.action(description="Reject selected requests…", permissions=["decide"])
    def reject_selected(self, request, queryset):
        applying = "apply" in request.POST
        pending = list(queryset) if applying else self._pending_only(request, queryset)
        if not pending:
            return None
        form = NoteForm(request.POST if applying else None)
        if applying and form.is_valid():
            for obj in pending:
                try:
                    exception_request_reject(request=obj, actor=request.user, note=form.cleaned_data["note"])
                except DomainError as exc:
                    self.message_user(request, f"{obj}: {exc.message}", messages.ERROR)
                else:
                    self.message_user(request, f"Rejected {obj}.", messages.SUCCESS)
            return None
        return self._action_page(
            request,
            action="reject_selected",
            title="Reject exception requests",
            items=[{"obj": obj} for obj in pending],
            submit_label="Reject",
            ids=[obj.pk for obj in pending],
            shared_form=form,
        )


# ------------------------------------------------------------------ proposed decisions


@admin.register(ProposedDecision)
class ProposedDecisionAdmin(admin.ModelAdmin):
    """Decisions read from a thread. Nothing here changes a request by itself: "Confirm"
    runs the same approve/reject service as the request's buttons, with the proposal's
    outcome and deadline, as the release-team member who clicks it."""

    list_display = ["id", "request_link", "outcome", "granted_shown", "state", "author_name", "warnings_count"]
    list_filter = ["state", "outcome"]
    list_select_related = ["request__enhancement", "request__release", "request__milestone"]
    actions = ["confirm_selected", "dismiss_selected"]
    fields = [
        "request_link",
        "outcome",
        "state",
        "granted_text",
        "granted_shown",
        "readings_shown",
        "warnings_shown",
        "author_name",
        "sent_shown",
        "source_text",
        "entered_by",
        "resolved_by",
        "resolved_at",
    ]
    readonly_fields = fields

    def has_add_permission(self, request):
        return False  # proposals come from read threads (ingest_exception, the mailbox)

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/confirm/", wrap(self.confirm_view), name="exceptions_proposeddecision_confirm"),
            path("<path:object_id>/dismiss/", wrap(self.dismiss_view), name="exceptions_proposeddecision_dismiss"),
            *super().get_urls(),
        ]

    def _one(self, request, object_id, call, done: str) -> HttpResponse:
        """The request page's one-click buttons (POST only): confirm or dismiss one proposal."""
        proposal = self.get_object(request, object_id)
        if proposal is None:
            from django.http import Http404

            raise Http404(f"No proposed decision {object_id!r}.")
        if request.method != "POST":
            return HttpResponseRedirect(reverse("admin:exceptions_proposeddecision_change", args=[proposal.pk]))
        self._resolve(request, ProposedDecision.objects.filter(pk=proposal.pk), call, done)
        return HttpResponseRedirect(reverse("admin:exceptions_exceptionrequest_change", args=[proposal.request_id]))

    def confirm_view(self, request, object_id):
        proposal = self.get_object(request, object_id)
        if (
            proposal is not None
            and request.method == "POST"
            and proposal.state == ProposedDecision.State.PROPOSED
            and proposal.outcome == Decision.Outcome.APPROVED
            and proposal.granted_until is None
            and proposal.granted_text
        ):
            # The reply's deadline could not be placed (e.g. "IST"): the approve form asks for it.
            self.message_user(
                request,
                f"The reply's deadline {proposal.granted_text!r} could not be read unambiguously "
                f"({' '.join(proposal.warnings)}) Give it here to approve.",
                messages.WARNING,
            )
            return HttpResponseRedirect(
                reverse("admin:exceptions_exceptionrequest_approve", args=[proposal.request_id])
            )
        return self._one(
            request, object_id, lambda p: proposed_decision_confirm(proposal=p, actor=request.user), "confirmed"
        )

    def dismiss_view(self, request, object_id):
        return self._one(
            request, object_id, lambda p: proposed_decision_dismiss(proposal=p, actor=request.user), "dismissed"
        )

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="Request")
    def request_link(self, obj: ProposedDecision) -> str:
        url = reverse("admin:exceptions_exceptionrequest_change", args=[obj.request_id])
        return format_html('<a href="{}">{}</a>', url, str(obj.request))

    @admin.display(description="Granted until (read)")
    def granted_shown(self, obj: ProposedDecision) -> str:
        if obj.outcome != Decision.Outcome.APPROVED:
            return "-"
        if obj.granted_until is None:
            return f"not placed: {obj.granted_text!r}" if obj.granted_text else "not given (the default applies)"
        return tz.render_deadline(obj.granted_until, obj.granted_zone or obj.request.release.zone)

    @admin.display(description="Sent")
    def sent_shown(self, obj: ProposedDecision) -> str:
        return tz.render(obj.sent_at, obj.request.release.zone) if obj.sent_at else "-"

    @admin.display(description="Warnings")
    def warnings_count(self, obj: ProposedDecision) -> int:
        return len(obj.warnings)

    @admin.display(description="Warnings")
    def warnings_shown(self, obj: ProposedDecision) -> str:
        return format_html_join("", "<p>{}</p>", ((w,) for w in obj.warnings)) or "-"

    @admin.display(description="Readings of the deadline")
    def readings_shown(self, obj: ProposedDecision) -> str:
        return format_html_join("", "<p>{} = {}</p>", ((r.get("reading"), r.get("utc")) for r in obj.readings)) or "-"

    def _resolve(self, request, queryset, call, done: str) -> None:
        if not request.user.has_perm(DECIDE_PERMISSION):
            self.message_user(request, "Only members of the release team can decide requests.", messages.ERROR)
            return
        for proposal in queryset.select_related("request").order_by("id"):
            try:
                call(proposal)
            except DomainError as exc:
                self.message_user(request, f"Proposal #{proposal.pk}: {exc.message}", messages.ERROR)
            else:
                self.message_user(request, f"Proposal #{proposal.pk} {done}: {proposal.request}.", messages.SUCCESS)

    @admin.action(description="Confirm the selected proposed decisions (approve or reject as read)")
    def confirm_selected(self, request, queryset):
        self._resolve(
            request, queryset, lambda p: proposed_decision_confirm(proposal=p, actor=request.user), "confirmed"
        )

    @admin.action(description="Dismiss the selected proposed decisions (misread; the request stays pending)")
    def dismiss_selected(self, request, queryset):
        self._resolve(
            request, queryset, lambda p: proposed_decision_dismiss(proposal=p, actor=request.user), "dismissed"
        )


# ------------------------------------------------ the schedule's pages, with the grants


def warn_of_grant_conflicts(request, milestone: Milestone) -> None:
    """Say what a saved milestone overrides (``exceptions.selectors.grant_conflicts``: a
    grant superseded by a moved freeze, a grant past a moved rc.0)."""
    if milestone.cancelled:
        return
    for deadline in grant_conflicts(milestone=milestone):
        messages.warning(request, f"{milestone.title}: KEP-{deadline.keps[0]}: {deadline.warning}")


class MilestoneAdmin(schedule_admin.MilestoneAdmin):
    """The schedule's milestone page (``releasecal/admin.py``), saying which granted
    extensions a save overrides."""

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        warn_of_grant_conflicts(request, obj)


class ReleaseAdmin(schedule_admin.ReleaseAdmin):
    """The schedule's release page with its milestones inline (``releasecal/admin.py``),
    saying which granted extensions the saved milestones override."""

    def save_formset(self, request, form, formset, change):
        super().save_formset(request, form, formset, change)
        if formset.model is Milestone:
            for milestone in [*formset.new_objects, *(obj for obj, _ in formset.changed_objects)]:
                warn_of_grant_conflicts(request, milestone)


admin.site.unregister(Milestone)
admin.site.register(Milestone, MilestoneAdmin)
admin.site.unregister(Release)
admin.site.register(Release, ReleaseAdmin)
