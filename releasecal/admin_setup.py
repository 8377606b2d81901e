"""Cycle set-up in the admin, for release leads and staff (anyone who may change
releases): ``/admin/releasecal/release/setup/``.

- **Import a release README** (uploaded or pasted): the schedule importer's dry run is
  shown first (its summary and every warning), and only "Apply" saves it, through the
  same public entry point as ``manage.py import_schedule`` (``schedule_import``).
- **New cycle from an existing one**: every date shifted by whole weeks, each deadline
  keeping its wall time in its zone; a deadline landing in a DST gap or fold is reported
  and the copy refused until another shift is chosen (``releasecal/cycle.py``). Team and
  exception policy copied or not.

``ReleaseAdmin.get_urls`` routes here; the views only parse input and call the services.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from releasecal.cycle import cycle_create, cycle_plan
from releasecal.errors import DomainError
from releasecal.importers.schedule import schedule_import
from releasecal.models import Release

SETUP_PERMISSION = "releasecal.change_release"
README_MAX_BYTES = 2_000_000


class ReadmeForm(forms.Form):
    readme_file = forms.FileField(label="Release README (file)", required=False)
    readme_text = forms.CharField(
        label="or paste it",
        required=False,
        widget=forms.Textarea(attrs={"rows": 12, "cols": 100, "spellcheck": "false"}),
        help_text="The release's README.md from kubernetes/sig-release (releases/release-1.NN/README.md).",
    )

    def clean(self):
        data = super().clean()
        upload = data.get("readme_file")
        if upload is not None:
            if upload.size > README_MAX_BYTES:
                raise forms.ValidationError("The file is larger than 2 MB: is it a release README?")
            try:
                data["readme_text"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError("The file is not UTF-8 text: upload the README.md itself.") from None
        if not (data.get("readme_text") or "").strip():
            raise forms.ValidationError("Upload the release README or paste its text.")
        return data


class CycleForm(forms.Form):
    source = forms.ModelChoiceField(
        label="New cycle from", queryset=Release.objects.order_by("-start_date"), empty_label=None
    )
    slug = forms.CharField(label="New release", max_length=32, help_text="e.g. 1.38")
    name = forms.CharField(label="Name", max_length=200, required=False, help_text="Empty: Kubernetes v<release>")
    weeks = forms.IntegerField(
        label="Shift every date by (weeks)", min_value=1, max_value=104, help_text="Whole weeks keep the weekdays."
    )
    copy_team = forms.BooleanField(label="Copy the leads and the team", required=False, initial=True)
    copy_policy = forms.BooleanField(
        label="Copy the exception policy (window, warning days, hard stop)", required=False, initial=True
    )


def _allowed(request) -> None:
    if not request.user.has_perm(SETUP_PERMISSION):
        raise PermissionDenied


def cycle_setup_view(model_admin, request):
    _allowed(request)
    readme_form = ReadmeForm(prefix="readme")
    cycle_form = CycleForm(prefix="cycle")
    context = {}
    action = request.POST.get("action", "")
    if request.method == "POST" and action.startswith("readme-"):
        readme_form = ReadmeForm(request.POST, request.FILES, prefix="readme")
        if readme_form.is_valid():
            text = readme_form.cleaned_data["readme_text"]
            apply = action == "readme-apply"
            try:
                result = schedule_import(
                    text=text, dry_run=not apply, actor_label=f"admin cycle set-up ({request.user.get_username()})"
                )
            except DomainError as exc:
                context["readme_errors"] = [getattr(exc, "head", exc.message), *exc.extra.get("errors", [])]
            else:
                if apply:
                    messages.success(request, result.summary())
                    release = Release.objects.filter(slug__in=result.releases).order_by("-start_date").first()
                    target = (
                        reverse("admin:releasecal_release_change", args=[release.pk])
                        if release is not None
                        else reverse("admin:releasecal_release_changelist")
                    )
                    return HttpResponseRedirect(target)
                context["readme_preview"] = result
                # The text to apply is the text previewed: kept in the form, the file not re-sent.
                readme_form = ReadmeForm(initial={"readme_text": text}, prefix="readme")
    elif request.method == "POST" and action.startswith("cycle-"):
        cycle_form = CycleForm(request.POST, prefix="cycle")
        if cycle_form.is_valid():
            data = cycle_form.cleaned_data
            plan = cycle_plan(
                source=data["source"],
                slug=data["slug"],
                name=data["name"],
                weeks=data["weeks"],
                copy_team=data["copy_team"],
                copy_policy=data["copy_policy"],
            )
            if action == "cycle-apply" and not plan.problems:
                try:
                    release = cycle_create(plan=plan, actor=request.user)
                except DomainError as exc:
                    plan.problems.append(exc.message)
                else:
                    messages.success(
                        request,
                        f"Release {release.slug} created from {plan.source.slug}, {plan.weeks} weeks later: "
                        f"{len(plan.milestones)} milestones"
                        + ("" if plan.copy_team else "; no team yet (add the leads and the team below)")
                        + ".",
                    )
                    return HttpResponseRedirect(reverse("admin:releasecal_release_change", args=[release.pk]))
            context["cycle_plan"] = plan
    context.update(
        {
            **model_admin.admin_site.each_context(request),
            "opts": model_admin.model._meta,
            "title": "Set up a release cycle",
            "readme_form": readme_form,
            "cycle_form": cycle_form,
        }
    )
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, "admin/releasecal/release/cycle_setup.html", context)
