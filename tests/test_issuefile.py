"""Issue files: sections, criteria lists, front matter, should-not lines, and finding by ID."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.load.issuefile import find_issue, list_items, load_issue, parse_issue
from engine.model.errors import UsageError
from tests.properties import examples

DATA = Path(__file__).parent / "data" / "issues"


def fixture(name: str) -> Path:
    return next(DATA.rglob(name))


def test_feature_with_checkbox_criteria() -> None:
    issue = load_issue(fixture("P2-FEAT-919-sprint-dashboard.md"))
    assert (issue.id, issue.kind, issue.title) == ("FEAT-919", "feature", "Sprint dashboard")
    assert issue.use_case.startswith("A team lead opens the dashboard")
    assert "grouped by priority" in issue.expected_behavior
    assert issue.acceptance_criteria == (
        "The dashboard loads and shows the issues of the current sprint grouped by priority.",
        "Filtering to P1 shows only P1 issues, with the count matching the header.",
        "Reassignment persists after a page refresh.",
        "Issues from a closed sprint must not appear.",
    )
    # A later, repeated "Acceptance ..." heading does not add to or replace the criteria.
    assert not any("Not part of the criteria" in c for c in issue.acceptance_criteria)
    assert issue.should_not == (
        "Issues from a closed sprint must not appear.",
        "The page should never show issues from a closed sprint.",
    )


def test_bug_with_numbered_multiline_criteria_and_reproduction() -> None:
    issue = load_issue(fixture("P1-BUG-204-export-crash.md"))
    assert (issue.id, issue.kind) == ("BUG-204", "bug")
    assert issue.title == "CSV export crashes on empty projects"
    assert issue.steps_to_reproduce.splitlines()[0] == "1. Create a new project with no issues."
    assert "ZeroDivisionError" in issue.actual_behavior
    assert issue.expected_behavior.startswith("The export writes a CSV file")  # "Behaviour"
    assert issue.acceptance_criteria[0].endswith("the header row `id,title,priority,assignee`.")
    assert issue.acceptance_criteria[1] == (
        "Exporting a project with issues still writes one row per issue, in the same column "
        "order as before."
    )
    assert issue.should_not == ("The command never prints a Python traceback.",)


def test_front_matter_overrides_and_odd_characters_survive() -> None:
    issue = load_issue(fixture("P3-ENH-77-config-reload.md"))
    assert issue.id == "ENH-77"
    assert issue.kind == "enhancement"
    assert issue.title == "Reload config: without restart (#hot-reload)"
    assert issue.front_matter["labels"] == ["config", "ops: runtime"]
    assert len(issue.acceptance_criteria) == 4
    assert "`{{ user }}`, `${ENV_VAR}` and `$${literal}`" in issue.acceptance_criteria[3]
    assert "${context.secret}" in issue.summary


def test_criteria_from_front_matter_list() -> None:
    issue = load_issue(fixture("FEAT-88-api-keys.md"))
    assert issue.title == "API keys for the REST API"
    assert issue.acceptance_criteria[1] == (
        "`tracker keys revoke KEY` makes the next API call with that key fail with 401 and the "
        "message `key revoked`."
    )


def test_front_matter_criteria_skip_empty_entries_and_refuse_nested_ones() -> None:
    """`- ` (null) became the criterion `None`, a nested list `['a', 'b']`, and a mapping was
    ignored, so scaffold-verify said the issue had no criteria at all."""
    issue = parse_issue("---\nacceptance_criteria:\n  - works\n  -\n  - 3\n---\n# FEAT-1: t\n")
    assert issue.acceptance_criteria == ("works", "3")
    for value, said in (("\n  - [a, b]", "is a list: ['a', 'b']"), (" {a: 1}", "must be a list")):
        text = f"---\nacceptance_criteria:{value}\n---\n# FEAT-1: t\n"
        with pytest.raises(UsageError, match=re.escape(said)):
            parse_issue(text, path=Path("FEAT-1.md"))


def test_bold_headings_nested_bullets_fences_and_comments() -> None:
    issue = load_issue(fixture("P2-FEAT-31-cli-colours.md"))
    assert issue.title == "Colourful CLI output ✨"
    assert issue.use_case.startswith("As a developer on a dark terminal")
    assert "\u2028" not in issue.use_case  # YAML would read it as a line break
    assert issue.acceptance_criteria == (
        "Blocked issues are shown in red, done issues in green (ANSI codes `\\033[31m` and "
        "`\\033[32m`). With `NO_COLOR=1` set, no escape codes are printed at all.",
        "Piping the output (`tracker list | cat`) prints no escape codes.",
        "Column widths line up with and without colour — e.g. `|  done  |`.",
    )


def test_missing_sections_stay_empty_and_preamble_is_the_summary() -> None:
    issue = load_issue(fixture("BUG-555-bare.md"))
    assert (issue.id, issue.kind, issue.title) == ("BUG-555", "bug", "Notifications arrive twice")
    assert issue.summary == "Some users get every notification e-mail twice."
    assert issue.acceptance_criteria == ()
    assert issue.expected_behavior == issue.use_case == issue.steps_to_reproduce == ""


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ("- [ ] one\n- [x] two\n", ("one", "two")),
        ("1. one\n   continued\n2) two\n", ("one continued", "two")),
        ("* one\n  - detail\n* two\n", ("one detail", "two")),
        ("- one\n\n  still one\n\nnot an item\n\n- two\n", ("one still one", "two")),
        ("First paragraph\nwrapped.\n\nSecond.\n", ("First paragraph wrapped.", "Second.")),
        ("- one\n\n```\n# code\n```\n- two\n", ("one", "two")),
    ],
)
def test_list_items_shapes(section: str, expected: tuple[str, ...]) -> None:
    assert list_items(section) == expected


def test_heading_levels_and_variants() -> None:
    text = (
        "# Title\n\n#### Expected Results\nworks\n\n## 3. Acceptance Criteria (all must hold)\n"
        "- a\n\n##### Reproduction Steps\n1. go\n\n## Current behaviour\nbreaks\n"
    )
    issue = parse_issue(text, issue_id="BUG-1")
    assert issue.expected_behavior == "works"
    assert issue.acceptance_criteria == ("a",)
    assert issue.steps_to_reproduce == "1. go"
    assert issue.actual_behavior == "breaks"
    assert issue.kind == "bug"


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        (
            "### AC1: Export button\n\nThe button downloads a CSV.\n\n### AC2: Columns\n\n"
            "It has id and title.\n",
            (
                "AC1: Export button. The button downloads a CSV.",
                "AC2: Columns. It has id and title.",
            ),
        ),
        ("Grouped:\n\n### Functional\n- [ ] a\n- [ ] b\n### Speed\n\n- c\n", ("a", "b", "c")),
    ],
)
def test_criteria_under_sub_headings_are_criteria(section: str, expected: tuple[str, ...]) -> None:
    """A sub-heading inside Acceptance Criteria (one per criterion, or one per group) ended the
    section: the issue had no criteria, and scaffold-verify refused it as having none."""
    text = f"# FEAT-6: Export\n\n## Acceptance Criteria\n\n{section}\n## Notes\n\n### Later\n\nno\n"
    assert parse_issue(text).acceptance_criteria == expected


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_windows_and_classic_mac_line_ends(newline: str) -> None:
    """A lone CR was deleted, not read as a line break: a classic Mac file became one line and
    had no sections, so scaffold-verify said it had no acceptance criteria."""
    text = newline.join(
        ["---", "id: FEAT-20", "---", "# CR", "## Acceptance Criteria", "- a", "- b"]
    )
    issue = parse_issue(text)
    assert (issue.id, issue.title, issue.acceptance_criteria) == ("FEAT-20", "CR", ("a", "b"))


def test_pathological_markdown_is_read_in_linear_time() -> None:
    """A heading padded with spaces backtracked in cubic time (1,500 spaces: 10 s, 2,000: 20 s),
    and each unclosed `<!--` was scanned to the end of the text (10,000 of them: 4 s)."""
    text = (
        "# FEAT-1: t"
        + " " * 1500
        + "x\n\n## Summary ##\n\nhello <!-- gone --> world\n"
        + "<!--" * 10000
        + "\n\n## "
        + "(" * 10000
        + "\n"
    )
    started = time.monotonic()
    issue = parse_issue(text)
    assert time.monotonic() - started < 2
    assert issue.summary.startswith("hello  world\n<!--<!--")  # an unclosed comment is kept
    assert parse_issue("# C#\n\n## Use Case ##\nu\n").title == "C#"  # `#` closes after a space


def test_bad_front_matter_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "FEAT-1-x.md"
    path.write_text("---\nid: FEAT-1\ntitle: [unclosed\n---\n# x\n")
    with pytest.raises(UsageError) as caught:
        load_issue(path)
    assert f"{path}:" in caught.value.message
    assert "front matter is not valid YAML" in caught.value.message


def test_front_matter_must_be_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "FEAT-2-x.md"
    path.write_text("---\n- a\n- b\n---\n# x\n")
    with pytest.raises(UsageError, match="must be a mapping"):
        load_issue(path)


# --- find_issue ----------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(DATA, tmp_path / ".issues")
    return tmp_path


def test_find_by_id_case_insensitive(project: Path) -> None:
    found = find_issue("feat-919", project)
    assert found.name == "P2-FEAT-919-sprint-dashboard.md"


def test_find_whole_token_only_and_suggest(project: Path) -> None:
    with pytest.raises(UsageError) as caught:
        find_issue("FEAT-91", project)  # must not match FEAT-919
    assert "no issue FEAT-91" in caught.value.message
    assert "FEAT-919" in caught.value.hint


def test_find_suggests_same_number_other_prefix(project: Path) -> None:
    with pytest.raises(UsageError) as caught:
        find_issue("ENH-204", project)
    assert "BUG-204" in caught.value.hint


def test_find_ambiguous_lists_every_match(project: Path) -> None:
    completed = project / ".issues" / "completed"
    completed.mkdir()
    (completed / "P2-FEAT-919-old-dashboard.md").write_text("# FEAT-919: old\n")
    with pytest.raises(UsageError) as caught:
        find_issue("FEAT-919", project)
    message = caught.value.message
    assert "ambiguous" in message
    assert "completed/P2-FEAT-919-old-dashboard.md" in message
    assert "features/P2-FEAT-919-sprint-dashboard.md" in message


def test_find_prefers_the_file_named_by_the_id_over_one_that_mentions_it(project: Path) -> None:
    """eval-driven-development files P2-BUG-302-eval-harness-feat-919.md for a failing harness;
    from then on FEAT-919 was ambiguous and scaffold-eval/verify refused it."""
    bug = project / ".issues" / "bugs" / "P2-BUG-302-eval-harness-feat-919.md"
    bug.write_text("# BUG-302: eval harness eval-harness-feat-919 does not pass\n")
    assert find_issue("FEAT-919", project).name == "P2-FEAT-919-sprint-dashboard.md"
    assert find_issue("bug-302", project) == bug
    with pytest.raises(UsageError) as caught:  # and a near miss is pointed at the right file
        find_issue("FEAT-9190", project)
    assert "FEAT-919 (.issues/features/P2-FEAT-919-sprint-dashboard.md)" in caught.value.hint


def test_find_from_a_sub_directory_of_the_project(project: Path) -> None:
    """From `src/` the lookup said there was no .issues/ directory, while the harness it would
    write went to the project's .loops/ and `ll-loop run` found loops from there."""
    (project / ".loops").mkdir()
    deep = project / "src" / "deep"
    deep.mkdir(parents=True)
    found = find_issue("FEAT-919", deep)
    assert found == project / ".issues" / "features" / "P2-FEAT-919-sprint-dashboard.md"


def test_find_by_front_matter_id_or_title_when_the_name_has_none(project: Path) -> None:
    (project / ".issues" / "dashboard-v2.md").write_text("---\nid: ENH-5\n---\n# Dashboard\n")
    (project / ".issues" / "exports.md").write_text("# BUG-900: export is slow\n")
    assert find_issue("ENH-5", project).name == "dashboard-v2.md"
    assert find_issue("bug-900", project).name == "exports.md"
    with pytest.raises(UsageError):
        find_issue("BUG-90", project)  # still a whole token


def test_find_by_path_and_missing_path(project: Path) -> None:
    rel = ".issues/bugs/BUG-555-bare.md"
    assert find_issue(rel, project) == project / rel
    with pytest.raises(UsageError, match="no issue file at"):
        find_issue("nope/BUG-1.md", project)


def test_find_without_issues_dir(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no \.issues/ directory"):
        find_issue("FEAT-1", tmp_path)


# --- never a crash on odd input ------------------------------------------------------------------

_markdown_bits = st.sampled_from(
    [
        "# FEAT-1: t\n",
        "## Acceptance Criteria\n",
        "### expected behaviour\n",
        "**Use Case:**\n",
        "- [ ] a\n",
        "  continued\n",
        "1) b\n",
        "* c\n",
        "```\n",
        "---\n",
        "id: X-1\n",
        "title: [\n",
        "<!-- c -->\n",
        "\n",
        "text ${context.x} {{ y }}\n",
        "\u2028\u0085\ufeff\x00",
    ]
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(_markdown_bits | st.text(max_size=20), max_size=25))
def test_parse_issue_never_raises_anything_but_a_usage_error(parts: list[str]) -> None:
    from engine.load.loader import check_loop_text
    from engine.scaffold import scaffold_eval

    try:
        issue = parse_issue("".join(parts))
    except UsageError:
        return
    assert all(c.strip() for c in issue.acceptance_criteria)
    loop, _, problems = check_loop_text(scaffold_eval([issue]).text)
    assert loop is not None, [p.render() for p in problems]


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [("title", "[a, b]", "a list"), ("id", "{x: 1}", "a mapping"), ("summary", "true", "true")],
)
def test_a_front_matter_field_that_is_not_text_is_refused(
    field: str, value: str, kind: str
) -> None:
    """`title: [a, b]` became the title `['a', 'b']` (a Python repr) in the prompts."""
    text = f"---\n{field}: {value}\n---\n# FEAT-1: t\n\n## Acceptance Criteria\n- ok\n"
    with pytest.raises(UsageError, match=rf"front matter `{field}` must be text, got {kind}"):
        parse_issue(text, path=Path("FEAT-1.md"))


def test_an_issue_file_that_is_huge_or_endless_is_refused_not_read_whole(tmp_path: Path) -> None:
    """An issue file was read whole, whatever it was: `/dev/zero` (or a file the size of a
    disk) grew memory until the process died. Over 10 MB it is now one sentence."""
    huge = tmp_path / "FEAT-1-huge.md"
    huge.write_text("# Huge\n" + "x" * (11 * 1024 * 1024))
    for path in (huge, Path("/dev/zero")):
        with pytest.raises(UsageError) as refused:
            load_issue(path)
        assert "cannot read issue file" in str(refused.value), refused.value


def test_issue_text_holding_a_nul_character_is_refused() -> None:
    """A NUL in an issue's text (load_issue refuses such a file; parse_issue took the text)
    reached the scaffolded loop's actions, which the loader refuses (F016): scaffold-eval
    wrote an eval that could not load. The text is refused instead."""
    with pytest.raises(UsageError) as refused:
        parse_issue("# Nul\n\n## Acceptance Criteria\n- [ ] it works\x00 well\n")
    assert "contains a NUL character, so it is not an issue" in str(refused.value)
