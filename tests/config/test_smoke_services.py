import datetime as dt

from exceptions.services import exception_request_approve
from releasecal import tz


def test_approve_defaults_to_end_of_day_in_release_zone(pending_request, release_team_member):
    decision = exception_request_approve(request=pending_request, actor=release_team_member)
    # Code freeze 19:00 PDT Tue 23 July 2024 + 2 days -> end of Thu 25 July PDT = 26 July 07:00 UTC.
    assert decision.granted_until == dt.datetime(2024, 7, 26, 7, 0, tzinfo=dt.UTC)
    assert tz.render(decision.granted_until, "America/Los_Angeles") == (
        "00:00 PDT Friday 26 July 2024 (07:00 UTC Friday 26 July 2024)"
    )
