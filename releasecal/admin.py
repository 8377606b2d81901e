"""Admin for release leads: the schedule, KEPs, their tracking and the audit log.

Times are typed as wall times in the milestone's own zone and read by ``tz.parse_wall_time``
(a gap or fold time is refused, naming both offsets; an explicit offset is accepted).
Django's split datetime widget is not used: it reads the time in ``TIME_ZONE`` (UTC).
Milestones are saved through ``milestone_save`` so ``sequence`` and the audit log follow.
The exception workflow extends the release and milestone pages with the grants a save
overrides (``exceptions/admin.py``: the schedule domain knows nothing of grants).
"""

from __future__ import annotations

import json
from functools import partial

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import flatten_fieldsets
from django.db.models import Count
from django.urls import path
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext

from releasecal import tz
from releasecal.admin_setup import cycle_setup_view
from releasecal.errors import DomainError
from releasecal.models import (
    MAX_WINDOW_HOURS,
    AuditLog,
    Enhancement,
    EnhancementOwner,
    Milestone,
    MilestoneKind,
    Release,
    SigContact,
    SigLead,
    Tracking,
)
from releasecal.selectors import github_handle, release_hard_stop
from releasecal.services import (
    enhancement_owners_changed,
    milestone_cancel,
    milestone_delete,
    milestone_save,
    owners_snapshot,
    release_save,
    tracking_status_change,
)

WALL_TIME_HELP = (
    "Wall time in the zone given, 'YYYY-MM-DD HH:MM'. A time the clocks skip or repeat is refused; "
    "add an explicit offset such as '-07:00' or 'Z' to pin it."
)


class WallTimeField(forms.CharField):
    """Text for a wall time; the form turns it into an instant once the zone is known."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", WALL_TIME_HELP)
        kwargs.setdefault("widget", forms.TextInput(attrs={"size": 22, "placeholder": "YYYY-MM-DD HH:MM"}))
        super().__init__(**kwargs)


def clean_zone_value(value: str) -> str:
    try:
        return tz.normalize_zone_name(value)
    except DomainError as exc:
        raise forms.ValidationError(exc.message) from exc


class PlainActionCheckbox:
    """The changelist's row checkbox written directly, the same markup Django's
    ``ModelAdmin.action_checkbox`` renders through a widget template: on a page of a
    hundred rows those template renders were a third of the page's time."""

    def action_checkbox(self, obj) -> str:
        return format_html(
            '<input type="checkbox" name="{}" value="{}" class="action-select" aria-label="{}">',
            ACTION_CHECKBOX_NAME,
            obj.pk,
            gettext("Select this object for an action - {}").format(obj),
        )


class ZoneInput(forms.CharField):
    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 64)
        kwargs.setdefault("help_text", "IANA name (America/Los_Angeles, Europe/Berlin) or AoE")
        kwargs.setdefault("widget", forms.TextInput(attrs={"size": 20}))
        super().__init__(**kwargs)

    def clean(self, value):
        value = super().clean(value)
        return clean_zone_value(value) if value else value


def parse_wall_into(form: forms.Form, field: str, zone: str | None) -> None:
    """Replace the wall-time text in ``cleaned_data[field]`` by its UTC instant (or None)."""
    text = (form.cleaned_data.get(field) or "").strip()
    if not text:
        form.cleaned_data[field] = None
        return
    if not zone:
        form.add_error(field, "Give the zone this time is in.")
        return
    try:
        form.cleaned_data[field] = tz.parse_wall_time(text, zone, field=form.fields[field].label or field)
    except DomainError as exc:
        form.add_error(field, exc.message)


class MilestoneForm(forms.ModelForm):
    at = WallTimeField(label="At (wall time)")
    ends_at = WallTimeField(label="Ends at (wall time)")
    zone = ZoneInput()

    class Meta:
        model = Milestone
        fields = [
            "kind",
            "kind_label",
            "title",
            "at",
            "on_date",
            "ends_at",
            "ends_on",
            "zone",
            "description",
            "link",
            "cancelled",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        instance = self.instance
        if instance.pk and instance.zone:
            for name in ("at", "ends_at"):
                value = getattr(instance, name)
                self.initial[name] = tz.wall_time_input(value, instance.zone) if value else ""

    def clean(self):
        cleaned = super().clean()
        for name in ("on_date", "ends_on"):  # the service's range check, as a form error (not a 500)
            if cleaned.get(name) is not None:
                try:
                    tz.check_plausible_date(cleaned[name], field=name)
                except DomainError as exc:
                    self.add_error(name, exc.message)
        zone = cleaned.get("zone")
        if not zone:
            return cleaned  # the zone field carries its own error
        parse_wall_into(self, "at", zone)
        parse_wall_into(self, "ends_at", zone)
        at, on_date = cleaned.get("at"), cleaned.get("on_date")
        ends_at, ends_on = cleaned.get("ends_at"), cleaned.get("ends_on")
        if self.errors:
            return cleaned
        if (at is None) == (on_date is None):
            raise forms.ValidationError("Give either a time (At) or a date (On date), not both and not neither.")
        if ends_at is not None and at is None:
            self.add_error("ends_at", "A date-only milestone's window ends on a date (Ends on).")
        elif ends_on is not None and on_date is None:
            self.add_error("ends_on", "A timed milestone's window ends at a time (Ends at).")
        elif ends_at is not None and ends_at <= at:
            self.add_error("ends_at", "The window must end after it starts.")
        elif ends_on is not None and ends_on < on_date:
            self.add_error("ends_on", "The window must end on or after its first day.")
        return cleaned


def _milestone_when(milestone: Milestone) -> str:
    if milestone.pk is None or (milestone.at is None and milestone.on_date is None):
        return "-"
    text = milestone.display()
    return f"{text} — CANCELLED" if milestone.cancelled else text


def _save_milestones(request, formset) -> None:
    """Inline milestone rows go through the services; "delete" cancels unless superuser."""
    for milestone in formset.save(commit=False):
        milestone_save(milestone=milestone, actor=request.user)
    for milestone in formset.deleted_objects:
        if request.user.is_superuser:
            milestone_delete(milestone=milestone, actor=request.user)
        else:
            milestone_cancel(milestone=milestone, actor=request.user)
            messages.info(request, f"{milestone.title} was cancelled, not deleted (it stays as CANCELLED in feeds).")
    formset.save_m2m()


class MilestoneInline(admin.TabularInline):
    model = Milestone
    form = MilestoneForm
    extra = 1
    fields = ["kind", "title", "at", "on_date", "ends_at", "ends_on", "zone", "cancelled", "when", "sequence"]
    readonly_fields = ["when", "sequence"]
    show_change_link = True

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("release", "kind").order_by("closes_at", "id")

    @admin.display(description="When (native zone, UTC)")
    def when(self, obj: Milestone) -> str:
        return _milestone_when(obj)

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        if obj is not None:
            formset.form.base_fields["zone"].initial = obj.zone
        # The kinds, read once for every row's select (a ModelChoiceField would read them
        # again for each of a release's thirty rows); the queryset still validates. A
        # plain select: no add/change-kind links on each of the thirty rows, whose
        # rendering cost more than the rest of the row.
        kind = formset.form.base_fields["kind"]
        kind.widget = forms.Select()
        kind.choices = [("", kind.empty_label), *((k.pk, str(k)) for k in kind.queryset)]
        return formset


RELEASE_SLUG_RE = r"^[0-9A-Za-z][0-9A-Za-z._-]*$"


class ReleaseForm(forms.ModelForm):
    # Release slugs are versions ("1.31"); Django's slug validator refuses the dot.
    slug = forms.RegexField(
        regex=RELEASE_SLUG_RE,
        max_length=32,
        help_text="Short name used in URLs, e.g. 1.31 (letters, digits, '.', '-', '_').",
        error_messages={"invalid": "Use letters, digits, '.', '-' and '_' only, e.g. 1.31."},
    )
    hard_stop = WallTimeField(
        label="Hard stop (wall time in the release zone)",
        help_text="Empty: the first rc milestone (rc.0 cut). " + WALL_TIME_HELP,
    )
    zone = ZoneInput()

    class Meta:
        model = Release
        fields = [
            "slug",
            "name",
            "zone",
            "status",
            "start_date",
            "ga_date",
            "leads",
            "links",
            "exception_warn_days",
            "hard_stop",
            "announce_approvals",
            "announce_dev_list",
            "announce_sig_list",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.hard_stop:
            self.initial["hard_stop"] = tz.wall_time_input(self.instance.hard_stop, self.instance.zone)
        # One field per kind that allows exceptions: this release's request window in
        # hours, empty for the kind's default (Release.request_window_hours).
        own = self.instance.request_window_hours if isinstance(self.instance.request_window_hours, dict) else {}
        for kind in window_kinds():
            self.fields[window_field_name(kind)] = forms.IntegerField(
                label=f"Request window after {kind.name} (hours)",
                required=False,
                min_value=0,
                max_value=MAX_WINDOW_HOURS,
                initial=own.get(kind.slug),
                help_text=f"Empty: the kind's default, {kind.request_window_hours} hours.",
            )

    def _post_clean(self):
        stored = self.instance.request_window_hours
        own = dict(stored) if isinstance(stored, dict) else {}
        for kind in window_kinds():
            hours = self.cleaned_data.get(window_field_name(kind))
            if hours is None:
                own.pop(kind.slug, None)
            else:
                own[kind.slug] = hours
        self.instance.request_window_hours = own
        super()._post_clean()

    def clean_slug(self):
        slug = self.cleaned_data["slug"]
        if Release.objects.filter(slug=slug).exclude(pk=self.instance.pk).exists():
            raise forms.ValidationError(f"A release {slug!r} already exists.")
        return slug

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("zone"):
            parse_wall_into(self, "hard_stop", cleaned["zone"])
        lead = cleaned.get("enhancements_lead")
        team = {*cleaned.get("leads", []), *cleaned.get("team", [])}
        if lead is not None and "leads" in cleaned and lead not in team:
            self.add_error("enhancements_lead", f"{lead.get_username()} is not among this release's leads and team.")
        return cleaned


def window_kinds() -> list[MilestoneKind]:
    """The kinds a release sets a request window for: those that allow exceptions."""
    return list(MilestoneKind.objects.filter(allows_exceptions=True).order_by("ordering", "slug"))


def window_field_name(kind: MilestoneKind) -> str:
    return f"window_hours__{kind.slug}"


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    form = ReleaseForm
    inlines = [MilestoneInline]
    list_display = ["slug", "name", "zone", "status", "start_date", "ga_date", "milestone_count"]
    list_filter = ["status"]
    search_fields = ["slug", "name"]
    filter_horizontal = ["leads", "team"]
    readonly_fields = ["hard_stop_shown"]
    fieldsets = [
        (None, {"fields": ["slug", "name", "zone", "status", "start_date", "ga_date", "links"]}),
        (
            "Release team (who decides this release's exception requests)",
            {"fields": ["leads", "team", "enhancements_lead"]},
        ),
        (
            "Exception policy",
            {"fields": ["exception_warn_days", "hard_stop", "hard_stop_shown"]},
        ),
        (
            "Approval announcements (off by default)",
            {
                "fields": ["announce_approvals", "announce_dev_list", "announce_sig_list"],
                "description": "Each approved exception is emailed once to the dev list and the owning SIG's "
                "list (SIG contacts, from import_sigs); a correction of an announced approval too.",
            },
        ),
    ]

    def get_fieldsets(self, request, obj=None):
        windows = [window_field_name(kind) for kind in window_kinds()]
        return [*self.fieldsets, ("Request windows (hours after each freeze)", {"fields": windows})]

    def get_form(self, request, obj=None, **kwargs):
        # The window fields are the form's own (ReleaseForm.__init__), not the model's.
        fields = kwargs.get("fields") or flatten_fieldsets(self.get_fieldsets(request, obj))
        kwargs["fields"] = [name for name in fields if not name.startswith("window_hours__")]
        return super().get_form(request, obj, **kwargs)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_milestones=Count("milestones"))

    @admin.display(description="Milestones", ordering="_milestones")
    def milestone_count(self, obj: Release) -> int:
        return obj._milestones

    @admin.display(description="Hard stop in force")
    def hard_stop_shown(self, obj: Release) -> str:
        if obj.pk is None:
            return "-"
        stop = release_hard_stop(obj)
        if stop is None:
            return "None: no hard stop set and no rc milestone yet."
        source = "set above" if obj.hard_stop else "the first rc milestone"
        return f"{tz.render_deadline(stop, obj.zone)} ({source})"

    def save_model(self, request, obj, form, change):
        # Through the service: a moved hard stop tells Slack which grants it now cuts.
        release_save(release=obj)

    def save_formset(self, request, form, formset, change):
        if formset.model is Milestone:
            _save_milestones(request, formset)
        else:
            super().save_formset(request, form, formset, change)

    def get_urls(self):
        # Cycle set-up (releasecal/admin_setup.py): import a README, or copy a cycle shifted.
        setup = self.admin_site.admin_view(partial(cycle_setup_view, self))
        return [path("setup/", setup, name="releasecal_release_setup"), *super().get_urls()]


@admin.register(SigLead)
class SigLeadAdmin(admin.ModelAdmin):
    """SIG chairs and technical leads (``manage.py import_sigs sigs.yaml``); link each to
    a user so they can sign off their SIG's exception requests."""

    list_display = ["sig", "github", "name", "role", "user"]
    list_filter = ["role", "sig"]
    search_fields = ["sig", "github", "name", "email", "user__username"]
    autocomplete_fields = ["user"]


@admin.register(SigContact)
class SigContactAdmin(admin.ModelAdmin):
    """Each SIG's mailing list (``manage.py import_sigs sigs.yaml``): approvals are
    announced to ``mailing_list``; fill it in where the import could not derive it."""

    list_display = ["sig", "name", "mailing_list", "mailing_list_url"]
    search_fields = ["sig", "name", "mailing_list"]


@admin.register(MilestoneKind)
class MilestoneKindAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "allows_exceptions", "is_freeze", "ordering"]
    list_editable = ["allows_exceptions", "is_freeze", "ordering"]
    search_fields = ["slug", "name"]


def _audit_rows_html(rows) -> str:
    if not rows:
        return "No audit rows."
    return format_html(
        "<table><tr><th>When (UTC)</th><th>Who</th><th>Action</th><th>Before</th><th>After</th></tr>{}</table>",
        format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            (
                (
                    tz.render_in_zone(row.at, "UTC"),
                    row.actor_label,
                    row.action,
                    json.dumps(row.before, sort_keys=True) if row.before is not None else "",
                    json.dumps(row.after, sort_keys=True) if row.after is not None else "",
                )
                for row in rows
            ),
        ),
    )


@admin.register(Milestone)
class MilestoneAdmin(PlainActionCheckbox, admin.ModelAdmin):
    form = MilestoneForm
    list_display = ["title", "release", "kind", "when", "zone", "sequence", "cancelled"]
    list_filter = ["release", "kind", "cancelled"]
    search_fields = ["title", "release__slug"]
    list_select_related = ["release", "kind"]
    readonly_fields = ["when", "wall_time_set", "sequence", "history"]
    actions = ["cancel_selected"]

    def get_queryset(self, request):
        return super().get_queryset(request).order_by("closes_at", "id")

    fields = [
        "release",
        "kind",
        "kind_label",
        "title",
        "at",
        "on_date",
        "ends_at",
        "ends_on",
        "zone",
        "when",
        "wall_time_set",
        "week",
        "description",
        "link",
        "cancelled",
        "sequence",
        "history",
    ]

    def get_fields(self, request, obj=None):
        if obj is not None:
            return [f if f != "release" else "release_shown" for f in self.fields]
        return [f for f in self.fields if f not in {"history", "sequence", "when", "wall_time_set"}]

    def get_readonly_fields(self, request, obj=None):
        return [*self.readonly_fields, "release_shown"]

    @admin.display(description="Release")
    def release_shown(self, obj: Milestone) -> str:
        return str(obj.release)

    @admin.display(description="When (native zone, UTC)")
    def when(self, obj: Milestone) -> str:
        return _milestone_when(obj)

    @admin.display(description="Wall time as set")
    def wall_time_set(self, obj: Milestone) -> str:
        """The wall time(s) kept beside the instant, and a warning when the running tzdata
        puts them elsewhere (``manage.py tzdata_check --apply`` moves the instant)."""
        parts = []
        for field, label in (("at", ""), ("ends_at", "ends ")):
            instant, wall = getattr(obj, field), getattr(obj, f"{field}_wall")
            if instant is None or wall is None:
                continue
            text = label + tz.render_wall(wall, obj.zone)
            moved, _ = tz.instant_for_wall(wall, obj.zone, instant)
            if moved != instant:
                text += (
                    f" (the zone rules now put this wall time at {tz.render_in_zone(moved, 'UTC')}, not "
                    f"{tz.render_in_zone(instant, 'UTC')}: run manage.py tzdata_check --apply)"
                )
            parts.append(text)
        return "; ".join(parts) or "-"

    @admin.display(description="History")
    def history(self, obj: Milestone) -> str:
        rows = AuditLog.objects.filter(object_type="releasecal.milestone", object_id=str(obj.pk)).order_by("at", "id")
        return _audit_rows_html(list(rows))

    def save_model(self, request, obj, form, change):
        milestone_save(milestone=obj, actor=request.user)

    def has_delete_permission(self, request, obj=None):
        # A removed milestone must stay in feeds as CANCELLED: only superusers really delete.
        return request.user.is_superuser

    def delete_model(self, request, obj):
        milestone_delete(milestone=obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        for milestone in queryset:
            milestone_delete(milestone=milestone, actor=request.user)

    @admin.action(description="Cancel selected milestones (kept as CANCELLED in feeds)", permissions=["change"])
    def cancel_selected(self, request, queryset):
        count = 0
        for milestone in queryset.filter(cancelled=False):
            milestone_cancel(milestone=milestone, actor=request.user)
            count += 1
        self.message_user(request, f"Cancelled {count} milestone(s).", messages.SUCCESS)


class EnhancementOwnerFormSet(forms.BaseInlineFormSet):
    """A handle once per KEP in any case, with or without its @ (the database refuses a
    second row; two new rows in one form would otherwise be a 500)."""

    def clean(self):
        super().clean()
        seen: dict[str, str] = {}
        for form in self.forms:
            if not getattr(form, "cleaned_data", None) or form.cleaned_data.get("DELETE"):
                continue
            handle = github_handle(form.cleaned_data.get("github") or "")
            form.cleaned_data["github"] = form.instance.github = handle
            if handle and handle.lower() in seen:
                raise forms.ValidationError(f"@{handle} is already an owner (as @{seen[handle.lower()]}).")
            if handle:
                seen[handle.lower()] = handle


class EnhancementOwnerInline(admin.TabularInline):
    model = EnhancementOwner
    formset = EnhancementOwnerFormSet
    extra = 1
    fields = ["github", "email", "slack_id", "user"]
    raw_id_fields = ["user"]


class TrackingInline(admin.TabularInline):
    model = Tracking
    extra = 0
    fields = ["release", "stage", "status", "pr_urls", "updated_at"]
    readonly_fields = ["updated_at"]
    show_change_link = True


@admin.register(Enhancement)
class EnhancementAdmin(admin.ModelAdmin):
    list_display = ["number", "title", "owning_sig", "kep_status", "kep_stage", "latest_milestone"]
    list_filter = ["owning_sig", "kep_status", "kep_stage"]
    search_fields = ["number__exact", "title", "owning_sig", "owners__github", "people__github"]
    readonly_fields = ["kep_status", "kep_stage", "latest_milestone", "stage_milestones", "kep_path", "people_named"]
    fieldsets = [
        (None, {"fields": ["number", "title", "owning_sig", "participating_sigs", "issue_url"]}),
        ("As kep.yaml says (import_keps writes it; an edit here would be undone)", {"fields": readonly_fields}),
    ]
    inlines = [EnhancementOwnerInline, TrackingInline]

    @admin.display(description="People kep.yaml names")
    def people_named(self, obj: Enhancement) -> str:
        groups: dict[str, list[str]] = {}
        for person in obj.people.order_by("role", "stage", "position"):
            label = person.get_role_display() + (f" ({person.stage})" if person.stage else "")
            groups.setdefault(label, []).append(f"@{person.github}")
        return "; ".join(f"{label}: {', '.join(handles)}" for label, handles in groups.items()) or "-"

    def save_related(self, request, form, formsets, change):
        # Owner rows edited inline: the reminder ledger re-syncs their deliveries.
        before = owners_snapshot(form.instance) if change else []
        super().save_related(request, form, formsets, change)
        enhancement_owners_changed(form.instance, before=before)


class SigFilter(admin.SimpleListFilter):
    title = "SIG"
    parameter_name = "sig"
    field = "enhancement__owning_sig"

    def lookups(self, request, model_admin):
        sigs = Enhancement.objects.order_by("owning_sig").values_list("owning_sig", flat=True).distinct()
        return [(sig, sig) for sig in sigs]

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(**{self.field: self.value()})
        return queryset


@admin.register(Tracking)
class TrackingAdmin(admin.ModelAdmin):
    list_display = ["enhancement", "release", "stage", "status", "sig", "updated_at"]
    list_filter = ["release", "stage", "status", SigFilter]
    search_fields = ["enhancement__number__exact", "enhancement__title"]
    list_select_related = ["enhancement", "release"]
    autocomplete_fields = ["enhancement"]

    @admin.display(description="SIG", ordering="enhancement__owning_sig")
    def sig(self, obj: Tracking) -> str:
        return obj.enhancement.owning_sig

    def save_model(self, request, obj, form, change):
        # A status the release team changes here is an event (the KEP issue's comment
        # follows it): it goes through the service, which audits it and sends the signal.
        if change and "status" in form.changed_data:
            status = obj.status
            obj.status = form.initial["status"]
            super().save_model(request, obj, form, change)
            tracking_status_change(tracking=obj, status=status, actor=request.user)
            obj.refresh_from_db()
            return
        super().save_model(request, obj, form, change)


@admin.register(AuditLog)
class AuditLogAdmin(admin.ModelAdmin):
    """Read-only for everyone, superusers included: the rows are the record."""

    list_display = ["when", "actor_label", "action", "object_type", "object_id", "object_label"]
    list_filter = ["action", "object_type"]
    search_fields = ["object_label", "actor_label", "object_id", "action"]
    fields = ["when", "actor_label", "actor", "action", "object_type", "object_id", "object_label", "before_json"]
    readonly_fields = fields
    list_per_page = 100

    @admin.display(description="When (UTC)", ordering="at")
    def when(self, obj: AuditLog) -> str:
        return tz.render_in_zone(obj.at, "UTC")

    @admin.display(description="Before → after")
    def before_json(self, obj: AuditLog) -> str:
        return format_html(
            "<pre>{}</pre><p>→</p><pre>{}</pre>",
            json.dumps(obj.before, indent=2, sort_keys=True),
            json.dumps(obj.after, indent=2, sort_keys=True),
        )

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
