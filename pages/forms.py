"""The KEP page's request forms: a KEP's owner files or amends their own exception
request (the same template fields as the API and the Slack modal; the same services, so
the same policy and messages)."""

from __future__ import annotations

from django import forms
from django.core.validators import URLValidator

from exceptions.services import RequestFields
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
    field_order = ["milestone", "days"]

    def __init__(self, *args, milestones, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["milestone"].queryset = milestones
        self.fields["milestone"].label_from_instance = lambda m: f"{m.title} ({m.release.name or m.release.slug})"


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
