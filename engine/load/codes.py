"""The stable codes of load-time diagnostics (F000–F055), each with a name and a summary.

Lint rules register their own codes (`lint._registry`); these are the loader's. Both lists
together are every rule a report can name: SARIF lists all of them in the same order in every
run, so a rule keeps its id and index wherever it is reported. docs/format.md ("Diagnostics")
documents each code; a test keeps the two in step.
"""

from __future__ import annotations

from typing import NamedTuple


class LoadCode(NamedTuple):
    code: str
    name: str
    summary: str


LOAD_CODES: tuple[LoadCode, ...] = (
    LoadCode("F000", "unreadable-file", "The file cannot be read."),
    LoadCode("F001", "yaml-syntax", "The YAML does not parse."),
    LoadCode("F002", "not-text", "The file is not text: binary, invalid UTF-8 or control bytes."),
    LoadCode("F003", "empty-file", "The file is empty."),
    LoadCode("F004", "not-a-mapping", "The top level is not a mapping of keys."),
    LoadCode("F005", "duplicate-key", "A key appears twice in one mapping."),
    LoadCode("F006", "key-not-a-name", "A mapping key is not a plain name."),
    LoadCode("F007", "unsupported-yaml", "Unsupported YAML: tags, alias bombs or deep nesting."),
    LoadCode("F010", "missing-key", "A required key is missing."),
    LoadCode("F011", "wrong-type", "A value has the wrong type."),
    LoadCode("F012", "unknown-key", "A key that is not valid at this place."),
    LoadCode("F013", "unsupported-key", "A key of the reference system that ll-loop refuses."),
    LoadCode("F014", "value-not-allowed", "A value outside its allowed set."),
    LoadCode("F015", "out-of-range", "A number out of range, or an empty value."),
    LoadCode("F016", "bad-format", "A value in the wrong format (name, path, regex, NUL, ...)."),
    LoadCode("F017", "conflicting-keys", "Keys that conflict with, or need, each other."),
    LoadCode("F018", "repeated-entry", "A list entry appears more than once."),
    LoadCode("F019", "schema-violation", "Another violation of the loop schema."),
    LoadCode("F030", "fragment-library", "A fragment library cannot be found, read or used."),
    LoadCode("F031", "unknown-fragment", "A state names a fragment no library defines."),
    LoadCode("F032", "fragment-binding", "A fragment's with: binding does not fit its parameters."),
    LoadCode("F040", "judge-kind-conflict", "A judge sets two kinds, or a field of another kind."),
    LoadCode("F041", "judge-without-kind", "A judge sets none of the fields that choose a kind."),
    LoadCode("F042", "duplicate-judge", "Two judges of one state have the same name."),
    LoadCode("F043", "check-does-not-compile", "An inline check snippet does not compile."),
    LoadCode(
        "F044",
        "judge-argument-shadowed",
        "An argument of a check or module judge named like what the judge is given.",
    ),
    # suites (engine/load/suite.py)
    LoadCode("F050", "suite-subject-kind", "A subject with no kind, two, or a field of another."),
    LoadCode("F051", "suite-cases", "A suite without exactly one of dataset and cases."),
    LoadCode("F052", "suite-threshold-judge", "A threshold names no judge of the suite."),
    LoadCode("F053", "suite-threshold-gate", "Two gates on a judge, or one that does not fit."),
    LoadCode("F054", "suite-name-taken", "Two cases, hooks or judges share an id or name."),
    LoadCode("F055", "suite-no-judges", "A suite with no judges."),
)
