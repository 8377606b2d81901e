"""The fake GitHub's GraphQL: real ProjectV2 shapes, pagination, and GitHub's refusals."""

from __future__ import annotations

import datetime as dt

from tests.fake_github.conftest import Client

BOARD = """
query Board($owner: String!, $number: Int!, $after: String) {
  organization(login: $owner) {
    projectV2(number: $number) {
      id
      title
      fields(first: 50) {
        nodes {
          __typename
          ... on ProjectV2FieldCommon { id name dataType }
          ... on ProjectV2SingleSelectField { options { id name } }
          ... on ProjectV2IterationField { configuration { iterations { id title startDate duration } } }
        }
      }
      items(first: 100, after: $after) {
        totalCount
        pageInfo { hasNextPage endCursor }
        nodes {
          id
          type
          content {
            __typename
            ... on Issue {
              id number title url state
              labels(first: 20) { nodes { name } }
              milestone { title }
              assignees(first: 10) { nodes { login } }
            }
            ... on DraftIssue { id title body }
          }
          fieldValues(first: 50) {
            nodes {
              __typename
              ... on ProjectV2ItemFieldSingleSelectValue {
                name optionId field { ... on ProjectV2FieldCommon { name } }
              }
              ... on ProjectV2ItemFieldTextValue { text field { ... on ProjectV2FieldCommon { name } } }
              ... on ProjectV2ItemFieldNumberValue { number field { ... on ProjectV2FieldCommon { name } } }
              ... on ProjectV2ItemFieldDateValue { date field { ... on ProjectV2FieldCommon { name } } }
              ... on ProjectV2ItemFieldIterationValue {
                title iterationId field { ... on ProjectV2FieldCommon { name } }
              }
            }
          }
        }
      }
    }
  }
  rateLimit { cost remaining used limit }
}
"""

SET_VALUE = """
mutation Set($project: ID!, $item: ID!, $field: ID!, $value: ProjectV2FieldValue!) {
  updateProjectV2ItemFieldValue(input: {projectId: $project, itemId: $item, fieldId: $field, value: $value}) {
    projectV2Item { id }
  }
}
"""


def read_board(client: Client, after: str | None = None) -> dict:
    answer = client.graphql(BOARD, owner="kubernetes", number=241, after=after)
    assert answer.status_code == 200
    body = answer.json()
    assert "errors" not in body, body
    return body["data"]["organization"]["projectV2"]


def values_by_field(item: dict) -> dict:
    out = {}
    for value in item["fieldValues"]["nodes"]:
        name = value.get("field", {}).get("name")
        for key in ("name", "text", "number", "date", "title"):
            if key in value:
                out[name] = value[key]
    return out


def ids(project: dict) -> tuple[dict, dict]:
    fields = {f["name"]: f for f in project["fields"]["nodes"]}
    items = {(i["content"].get("number") or i["content"]["title"]): i for i in project["items"]["nodes"]}
    return fields, items


def test_it_reads_a_board_with_real_projectv2_shapes(client, board):
    board.add_iteration("Sprint", dt.date(2026, 1, 5), count=2)
    board.world.set_value(
        board.item_for(board.world.repositories["kubernetes/enhancements"].issues[1880]),
        board.field("Sprint"),
        "Iteration 2",
        by=board.world.default_user,
        via="setup",
    )
    project = read_board(client)
    assert project["title"] == "v1.36 Release Tracking"
    fields, items = ids(project)
    assert fields["Status"]["__typename"] == "ProjectV2SingleSelectField"
    assert fields["Status"]["dataType"] == "SINGLE_SELECT"
    assert [o["name"] for o in fields["Exception Status"]["options"]] == ["In Review", "Approved", "Rejected"]
    assert all(len(o["id"]) == 8 for o in fields["Status"]["options"])  # option ids are 8-hex, not node ids
    assert fields["Additional Time"]["dataType"] == "NUMBER"
    assert fields["Exception Request Date"]["dataType"] == "DATE"
    assert fields["Title"]["dataType"] == "TITLE"  # GitHub's built-in fields are listed too
    assert fields["Sprint"]["configuration"]["iterations"][1]["startDate"] == "2026-01-19"
    assert fields["Status"]["id"].startswith("PVTSSF_")
    assert project["id"].startswith("PVT_")

    cidrs = items[1880]
    assert cidrs["type"] == "ISSUE"
    assert cidrs["id"].startswith("PVTI_")
    assert cidrs["content"]["__typename"] == "Issue"
    assert cidrs["content"]["url"] == "https://github.com/kubernetes/enhancements/issues/1880"
    assert cidrs["content"]["state"] == "OPEN"
    assert [n["name"] for n in cidrs["content"]["labels"]["nodes"]] == ["lead-opted-in", "sig/network", "tracked/yes"]
    assert cidrs["content"]["milestone"] == {"title": "v1.36"}
    assert cidrs["content"]["assignees"]["nodes"] == [{"login": "aojea"}]
    assert values_by_field(cidrs) == {
        "Title": "Multiple Service CIDRs",
        "Stage": "Stable",
        "Status": "Tracked For Code Freeze",
        "SIG": "sig-network",
        "Sprint": "Iteration 2",
    }
    draft = items["KEP-1880: second exception"]
    assert draft["type"] == "DRAFT_ISSUE"
    assert draft["content"] == {
        "__typename": "DraftIssue",
        "id": draft["content"]["id"],
        "title": "KEP-1880: second exception",
        "body": "docs freeze",
    }
    assert values_by_field(draft)["Exception Request Type"] == "Docs Freeze"
    assert values_by_field(items[2400])["Note"] == "waiting on reviews"


def test_it_paginates_150_items_by_100_with_cursors(client, fake):
    repo = fake.repository()
    from tests.support.fake_github import k8s_board

    project = k8s_board(fake)
    for number in range(1000, 1150):
        project.add_issue(repo.issue(number, f"KEP {number}"))
    first = read_board(client)
    assert first["items"]["totalCount"] == 150
    assert len(first["items"]["nodes"]) == 100
    assert first["items"]["pageInfo"]["hasNextPage"] is True
    second = read_board(client, after=first["items"]["pageInfo"]["endCursor"])
    assert len(second["items"]["nodes"]) == 50
    assert second["items"]["pageInfo"]["hasNextPage"] is False
    numbers = [i["content"]["number"] for i in first["items"]["nodes"] + second["items"]["nodes"]]
    assert numbers == list(range(1000, 1150))


def test_it_refuses_more_than_100_or_no_page_size(client, board):
    query = '{ organization(login: "kubernetes") { projectV2(number: 241) { items(first: 101) { nodes { id } } } } }'
    too_many = client.graphql(query)
    assert too_many.status_code == 200
    assert too_many.json() == {
        "errors": [
            {
                "type": "EXCESSIVE_PAGINATION",
                "path": ["query", "organization", "projectV2", "items"],
                "locations": [{"line": 1, "column": query.index("items") + 1}],
                "message": "Requesting 101 records on the `items` connection exceeds the `first` limit of 100 records.",
            }
        ]
    }
    unbounded = client.graphql(
        '{ organization(login: "kubernetes") { projectV2(number: 241) { items { nodes { id } } } } }'
    )
    assert unbounded.json()["errors"][0]["type"] == "MISSING_PAGINATION_BOUNDARIES"
    assert "data" not in unbounded.json()
    bad_cursor = client.graphql(BOARD, owner="kubernetes", number=241, after="bm90IGEgY3Vyc29y")
    error = bad_cursor.json()["errors"][0]
    assert error["type"] == "INVALID_CURSOR_ARGUMENTS"
    assert error["message"] == "`bm90IGEgY3Vyc29y` does not appear to be a valid cursor."


def test_it_refuses_what_the_schema_refuses_as_github_words_it(client, board):
    query = '{ organization(login: "kubernetes") { projectV2(number: 241) { idd } } }'
    unknown_field = client.graphql(query).json()
    assert unknown_field == {
        "errors": [
            {
                "path": ["query", "organization", "projectV2", "idd"],
                "extensions": {"code": "undefinedField", "typeName": "ProjectV2", "fieldName": "idd"},
                "locations": [{"line": 1, "column": query.index("idd") + 1}],
                "message": "Field 'idd' doesn't exist on type 'ProjectV2'",
            }
        ]
    }
    wrong_type = client.graphql('{ organization(login: "kubernetes") { projectV2(number: "241") { id } } }').json()
    assert wrong_type["errors"][0]["extensions"]["code"] == "argumentLiteralsIncompatible"
    assert wrong_type["errors"][0]["extensions"]["argumentName"] == "number"
    assert "data" not in wrong_type
    unknown_mutation = client.graphql("mutation { setProjectV2Status(input: {}) { clientMutationId } }").json()
    assert unknown_mutation["errors"][0]["message"] == "Field 'setProjectV2Status' doesn't exist on type 'Mutation'"
    missing = client.graphql('{ organization(login: "kubernetes") { projectV2 { id } } }').json()
    assert missing["errors"][0]["message"] == "Field 'projectV2' is missing required arguments: number"
    variable = client.graphql(
        'query($n: Int!) { organization(login: "kubernetes") { projectV2(number: $n) { id } } }', n="x"
    )
    assert variable.json()["errors"][0]["message"] == "Variable $n of type Int! was provided invalid value"
    date = client.graphql(SET_VALUE, project="PVT_x", item="PVTI_x", field="PVTF_x", value={"date": "Dec 31, 2026"})
    assert (
        date.json()["errors"][0]["message"] == "Variable $value of type ProjectV2FieldValue! was provided invalid value"
    )
    parse = client.graphql("{ organization(login: ")
    assert parse.json()["errors"][0]["message"].startswith("Parse error on")
    assert client.fake.changes("field", via="graphql") == []


def test_it_refuses_wrong_ids_options_and_kinds_as_githubs_mutations_do(client, board, fake):
    project = read_board(client)
    fields, items = ids(project)
    item = items[1880]["id"]

    def set_value(field: str, value: dict, item_id: str = item, project_id: str = project["id"]) -> dict:
        answer = client.graphql(SET_VALUE, project=project_id, item=item_id, field=fields[field]["id"], value=value)
        assert answer.status_code == 200
        return answer.json()

    other_field_option = fields["Status"]["options"][0]["id"]
    refused = set_value("Exception Status", {"singleSelectOptionId": other_field_option})
    assert refused["data"] == {"updateProjectV2ItemFieldValue": None}
    assert refused["errors"] == [
        {
            "type": "VALIDATION",
            "path": ["updateProjectV2ItemFieldValue"],
            "locations": [{"line": 3, "column": 3}],
            "message": "The single select option Id does not belong to the field",
        }
    ]
    assert set_value("Additional Time", {"text": "3"})["errors"][0]["message"] == (
        "Did not receive a number value to update a field of type number"
    )
    assert set_value("Status", {"text": "Exception Pending"})["errors"][0]["message"] == (
        "Did not receive a single select option Id to update a field of type single_select"
    )
    assert set_value("Exception Request Date", {"number": 3})["errors"][0]["message"] == (
        "Did not receive a date value to update a field of type date"
    )
    assert (
        set_value("Labels", {"text": "x"})["errors"][0]["message"]
        == "The field of type labels is currently not supported."
    )
    assert (
        set_value("Title", {"text": "renamed"})["errors"][0]["message"]
        == "The title field can only be updated on DraftIssues"
    )
    wrong_node = set_value("Note", {"text": "x"}, item_id=project["id"])
    assert wrong_node["errors"][0]["type"] == "NOT_FOUND"
    assert (
        wrong_node["errors"][0]["message"]
        == f"Could not resolve to ProjectV2Item node with the global id of '{project['id']}'."
    )
    unknown = set_value("Note", {"text": "x"}, item_id="PVTI_doesnotexist")
    assert unknown["errors"][0]["message"] == "Could not resolve to a node with the global id of 'PVTI_doesnotexist'."
    other = fake.project("kubernetes", 264, "v1.37 Release Tracking")
    foreign = set_value("Note", {"text": "x"}, project_id=other.node_id)
    assert foreign["errors"][0] == {
        "type": "VALIDATION",
        "path": ["updateProjectV2ItemFieldValue"],
        "locations": [{"line": 3, "column": 3}],
        "message": "The item does not exist in the project",
    }
    assert fake.changes("field", via="graphql") == []
    assert len(fake.mutations(ok=False)) == 9


def test_several_mutations_in_one_document_each_write_once(client, board, fake):
    project = read_board(client)
    fields, items = ids(project)
    document = """
    mutation Decide(
      $p: ID!, $i: ID!, $status: ID!, $approved: String!, $kep: ID!, $exc: String!, $date: ID!, $days: ID!
    ) {
      status: updateProjectV2ItemFieldValue(input: {
        projectId: $p, itemId: $i, fieldId: $status, value: {singleSelectOptionId: $approved}
      }) { projectV2Item { id } }
      kep: updateProjectV2ItemFieldValue(input: {
        projectId: $p, itemId: $i, fieldId: $kep, value: {singleSelectOptionId: $exc}
      }) { projectV2Item { id } }
      decided: updateProjectV2ItemFieldValue(input: {
        projectId: $p, itemId: $i, fieldId: $date, value: {date: "2026-02-12"}
      }) { projectV2Item { id } }
      days: updateProjectV2ItemFieldValue(input: {
        projectId: $p, itemId: $i, fieldId: $days, value: {number: 3}
      }) { projectV2Item { id } }
    }
    """
    option = {f: {o["name"]: o["id"] for o in fields[f].get("options", [])} for f in fields}
    answer = client.graphql(
        document,
        p=project["id"],
        i=items[1880]["id"],
        status=fields["Exception Status"]["id"],
        approved=option["Exception Status"]["Approved"],
        kep=fields["Status"]["id"],
        exc=option["Status"]["Exception Approved"],
        date=fields["Exception Decision Date"]["id"],
        days=fields["Additional Time"]["id"],
    ).json()
    assert "errors" not in answer, answer
    assert set(answer["data"]) == {"status", "kep", "decided", "days"}
    item = board.item_for(fake.repository().issues[1880])
    assert item.value("Exception Status") == "Approved"
    assert item.value("Status") == "Exception Approved"
    assert item.value("Exception Decision Date") == dt.date(2026, 2, 12)
    assert item.value("Additional Time") == 3.0
    assert [(c.name, c.after) for c in fake.changes("field", via="graphql")] == [
        ("Exception Status", "Approved"),
        ("Status", "Exception Approved"),
        ("Exception Decision Date", dt.date(2026, 2, 12)),
        ("Additional Time", 3.0),
    ]
    assert [c.alias for c in fake.mutations("updateProjectV2ItemFieldValue")] == ["status", "kep", "decided", "days"]
    assert len(fake.graphql_requests()) == 2  # one read, one write


def test_items_are_added_once_drafted_cleared_and_deleted(client, board, fake):
    project = read_board(client)
    fields, items = ids(project)
    repo = fake.repository()
    new_issue = repo.issue(4444, "Traffic distribution for Services")
    add = "mutation($p: ID!, $c: ID!) { addProjectV2ItemById(input: {projectId: $p, contentId: $c}) { item { id } } }"
    first = client.graphql(add, p=project["id"], c=new_issue.node_id).json()["data"]["addProjectV2ItemById"]["item"][
        "id"
    ]
    again = client.graphql(add, p=project["id"], c=new_issue.node_id).json()["data"]["addProjectV2ItemById"]["item"][
        "id"
    ]
    assert first == again  # GitHub answers the item it already has
    assert len(fake.changes("item-added")) == 1
    draft_id = items["KEP-1880: second exception"]["content"]["id"]
    not_content = client.graphql(add, p=project["id"], c=draft_id).json()
    assert not_content["errors"][0]["message"] == "contentID must refer to an Issue or a Pull Request."

    draft = client.graphql(
        'mutation($p: ID!) { addProjectV2DraftIssue(input: {projectId: $p, title: "KEP-2400: code freeze", body: "b"}) '
        "{ projectItem { id type content { ... on DraftIssue { title } } } } }",
        p=project["id"],
    ).json()["data"]["addProjectV2DraftIssue"]["projectItem"]
    assert draft["type"] == "DRAFT_ISSUE"
    assert draft["content"]["title"] == "KEP-2400: code freeze"

    clear = (
        "mutation($p: ID!, $i: ID!, $f: ID!) { clearProjectV2ItemFieldValue(input: {projectId: $p, itemId: $i, "
        "fieldId: $f}) { projectV2Item { id } } }"
    )
    assert "errors" not in client.graphql(clear, p=project["id"], i=items[2400]["id"], f=fields["Note"]["id"]).json()
    assert board.item_for(repo.issues[2400]).value("Note") is None

    delete = "mutation($p: ID!, $i: ID!) { deleteProjectV2Item(input: {projectId: $p, itemId: $i}) { deletedItemId } }"
    assert (
        client.graphql(delete, p=project["id"], i=draft["id"]).json()["data"]["deleteProjectV2Item"]["deletedItemId"]
        == draft["id"]
    )
    gone = client.graphql(delete, p=project["id"], i=draft["id"]).json()
    assert gone["errors"][0]["message"] == f"Could not resolve to a node with the global id of '{draft['id']}'."


def test_rate_limit_cost_is_githubs_and_every_answer_has_the_headers(client, board, fake):
    answer = client.graphql(BOARD, owner="kubernetes", number=241)
    rate = answer.json()["data"]["rateLimit"]
    # fields(50) + items(100) + 100 x (labels, assignees, fieldValues): 302 requests -> 3 points
    assert rate["cost"] == 3
    assert answer.headers["x-ratelimit-resource"] == "graphql"
    assert answer.headers["x-ratelimit-used"] == "3"
    assert answer.headers["x-ratelimit-remaining"] == "4997" == str(rate["remaining"])
    assert int(answer.headers["x-ratelimit-reset"]) > fake.time()
    fake.limits.set_remaining("graphql", 0, reset_in=30)
    refused = client.graphql(BOARD, owner="kubernetes", number=241)
    assert refused.status_code == 200
    assert refused.headers["x-ratelimit-remaining"] == "0"
    assert refused.json()["errors"][0]["type"] == "RATE_LIMIT"
    assert refused.json()["errors"][0]["message"].startswith("API rate limit already exceeded for user ID ")
    fake.advance(31)
    assert client.graphql(BOARD, owner="kubernetes", number=241).json()["data"]["rateLimit"]["remaining"] == 4997


def test_the_secondary_limit_answers_403_with_retry_after(client, board, fake):
    fake.limits.content_per_minute = 3
    project = read_board(client)
    fields, items = ids(project)
    for _ in range(3):
        ok = client.graphql(
            SET_VALUE, project=project["id"], item=items[2400]["id"], field=fields["Note"]["id"], value={"text": "n"}
        )
        assert ok.status_code == 200
        assert "errors" not in ok.json()
    refused = client.graphql(
        SET_VALUE, project=project["id"], item=items[2400]["id"], field=fields["Note"]["id"], value={"text": "x"}
    )
    assert refused.status_code == 403
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert refused.json()["message"].startswith("You have exceeded a secondary rate limit")
    assert "x-ratelimit-remaining" in refused.headers
    assert board.item_for(fake.repository().issues[2400]).value("Note") == "n"
    fake.advance(61)
    again = client.graphql(
        SET_VALUE, project=project["id"], item=items[2400]["id"], field=fields["Note"]["id"], value={"text": "x"}
    )
    assert again.status_code == 200
    assert "errors" not in again.json()
    assert len(read_board(client)["items"]["nodes"]) == 3  # reads are not content-creating


def test_tokens_without_the_project_scope_or_permission_are_refused(fake, board):
    classic = Client(fake, fake.token("reader", scopes=("repo",)))
    refused = classic.graphql(BOARD, owner="kubernetes", number=241).json()
    assert refused["errors"][0]["type"] == "INSUFFICIENT_SCOPES"
    assert "['read:project']" in refused["errors"][0]["message"]
    read_only = Client(fake, fake.token("reader2", kind="fine-grained", permissions={"organization_projects": "read"}))
    project = read_board(read_only)
    fields, items = ids(project)
    write = read_only.graphql(
        SET_VALUE, project=project["id"], item=items[2400]["id"], field=fields["Note"]["id"], value={"text": "x"}
    )
    assert write.json()["errors"][0] == {
        "type": "FORBIDDEN",
        "path": ["updateProjectV2ItemFieldValue"],
        "locations": [{"line": 3, "column": 3}],
        "message": "Resource not accessible by personal access token",
    }
    anonymous = fake.graphql_url
    import requests

    assert requests.post(anonymous, json={"query": "{ viewer { login } }"}, timeout=10).status_code == 401
    bad = requests.post(
        anonymous, json={"query": "{ viewer { login } }"}, headers={"Authorization": "bearer ghp_nope"}, timeout=10
    )
    assert bad.status_code == 401
    assert bad.json()["message"] == "Bad credentials"
