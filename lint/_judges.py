"""Where each judge of a state sits in the YAML, and its interpolated strings (for the rules)."""

from __future__ import annotations

from collections.abc import Iterator

from engine.model.judges import Judge
from engine.model.loop import State
from lint._paths import state_path, strings_in
from lint._registry import PathKey

# The YAML key a builtin's argument was written under, by spelling (Polpo keys sit on the entry).
_ON_ENTRY = {"expectations", "metrics"}


def judges_with_paths(state: State) -> Iterator[tuple[Judge, PathKey]]:
    """The judges of an assessment state with the YAML path of each entry."""
    if state.evaluate is None or state.evaluate.type != "assessment":
        return
    seen: dict[str, int] = {}
    for judge in state.evaluate.judges:
        index = seen.get(judge.spelling, 0)
        seen[judge.spelling] = index + 1
        yield judge, state_path(state, "evaluate", judge.spelling, index)


def judge_strings(state: State) -> Iterator[tuple[PathKey, str]]:
    """Every string of a state's judges that is `${...}`-interpolated at run time."""
    for judge, path in judges_with_paths(state):
        yield from strings_of_judge(judge, path)


def strings_of_judge(judge: Judge, path: PathKey) -> Iterator[tuple[PathKey, str]]:
    """Every string of one judge (written at `path`) that is `${...}`-interpolated at run time."""
    if judge.spelling in _ON_ENTRY:
        for key, value in judge.arguments.items():
            if key != "threshold":
                yield from strings_in(value, (*path, key))
    else:
        yield from strings_in(dict(judge.arguments), (*path, "arguments"))
    for key in ("prompt", "llm_rubric", "criteria", "prompt_file"):
        text = getattr(judge, key)
        if isinstance(text, str):
            yield (*path, key), text
