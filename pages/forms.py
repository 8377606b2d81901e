"""The KEP page's request forms: a KEP's owner files or amends their own exception
request (the same template fields as the API and the Slack modal; the same services, so
the same policy and messages)."""

from __future__ import annotations

from django import forms
from django.core.validators import URLValidator

from exceptions.services import COMBINED_FREEZES, RequestFields, check_combined_freezes, request_window_closes
from releasecal import tz
from releasecal.errors import DomainError
from releasecal.models import Milestone, Tracking

MAX_PRS = 50


class RequestForm(forms.Form):
    days = forms.IntegerField(
        min_value=0,
        max_value=365,
        label="Additional days needed",
        help_text="At least 1 (0 asks only to be admitted past a PRR or enhancements freeze).",
    )
    stage = forms.ChoiceField(choices=[("", "—"), *Tracking.Stage.choices], required=False)
    until_text = forms.CharField(
        max_length=200, required=False, label="Until (as you would write it)", help_text="e.g. EOD Friday 26 July PDT"
    )
    until_zone = forms.CharField(
        max_length=64, required=False, label="Time zone of that date", help_text="e.g. Europe/Berlin"
    )
    pr_urls = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, label="PRs (one link a line)")
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), max_length=20000, label="Why is this critical?")
    risks_adding = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), max_length=20000, required=False, label="Risks of adding it late"
    )
    risks_cutting = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), max_length=20000, required=False, label="Risks of cutting it"
    )

    def clean_until_zone(self) -> str:
        zone = self.cleaned_data["until_zone"].strip()
        if not zone:
            return ""
        try:
            return tz.normalize_zone_name(zone)
        except DomainError as exc:
            raise forms.ValidationError(exc.message[:300]) from None

    def clean_pr_urls(self) -> list[str]:
        links = [line.strip() for line in self.cleaned_data["pr_urls"].splitlines() if line.strip()]
        if len(links) > MAX_PRS:
            raise forms.ValidationError(f"At most {MAX_PRS} PR links.")
        check = URLValidator(schemes=["http", "https"])
        for link in links:
            try:
                check(link)
            except forms.ValidationError:
                raise forms.ValidationError(f"Not a link: {link[:80]}. One PR link a line.") from None
        return links

    def fields_for(self, *, enhancement_name: str, sig: str, issue_url: str) -> RequestFields:
        data = self.cleaned_data
        return RequestFields(
            days=data["days"],
            enhancement_name=enhancement_name,
            stage=data["stage"],
            sig=sig,
            issue_url=issue_url,
            pr_urls=data["pr_urls"],
            until_text=data["until_text"].strip(),
            until_zone=data["until_zone"],
            reason=data["reason"].strip(),
            risks_adding=data["risks_adding"].strip(),
            risks_cutting=data["risks_cutting"].strip(),
        )


class FileRequestForm(RequestForm):
    milestone = forms.ModelChoiceField(
        queryset=Milestone.objects.none(), label="The deadline to extend", empty_label=None
    )
    also_milestone = forms.ModelChoiceField(
        queryset=Milestone.objects.none(),
        required=False,
        label="Also the freeze",
        empty_label="— (this deadline only)",
        help_text="One request may name the PRR freeze and the same release's enhancements freeze, with one "
        "completion date (the days asked count from the first freeze).",
    )
    field_order = ["milestone", "also_milestone", "days"]

    def __init__(self, *args, milestones, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["milestone"].queryset = milestones
        self.fields["milestone"].label_from_instance = _milestone_label
        pair = combined_freezes_open(milestones)
        if pair:
            self.fields["also_milestone"].queryset = milestones.filter(pk__in=pair)
            self.fields["also_milestone"].label_from_instance = _milestone_label
        else:  # no release has both freezes open: nothing to name twice
            del self.fields["also_milestone"]

    def clean(self):
        data = super().clean()
        milestone, also = data.get("milestone"), data.get("also_milestone")
        if milestone is not None and also is not None:
            try:
                data["milestone"], data["also_milestone"] = check_combined_freezes(milestone, also)
            except DomainError as exc:
                self.add_error("also_milestone", exc.message[:500])
        return data


def _milestone_label(milestone: Milestone) -> str:
    return f"{milestone.title} ({milestone.release.name or milestone.release.slug})"


def combined_freezes_open(milestones) -> list[int]:
    """The PRR and enhancements freezes among ``milestones`` whose release has both, each
    still open to requests (its request window not closed): the ones a request may name
    together."""
    now = tz.utc_now()
    first, second = COMBINED_FREEZES
    by_release: dict[int, dict[str, list[Milestone]]] = {}
    for milestone in milestones:
        if milestone.kind.slug in COMBINED_FREEZES and now <= request_window_closes(milestone):
            by_release.setdefault(milestone.release_id, {}).setdefault(milestone.kind.slug, []).append(milestone)
    return [
        m.pk
        for kinds in by_release.values()
        if kinds.get(first) and kinds.get(second)
        for slug in COMBINED_FREEZES
        for m in kinds[slug]
    ]


def amend_initial(revision) -> dict:
    return {
        "days": revision.days,
        "stage": revision.stage,
        "until_text": revision.until_text,
        "until_zone": revision.until_zone,
        "pr_urls": "\n".join(revision.pr_urls or []),
        "reason": revision.reason,
        "risks_adding": revision.risks_adding,
        "risks_cutting": revision.risks_cutting,
    }
