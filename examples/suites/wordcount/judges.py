"""A `module` + `function` judge of the word-count example: the result file is well formed."""

import json


def valid_result(outputs, **_arguments):
    """out/result.json holds a JSON object with an integer `words`."""
    text = outputs["files"].get("out/result.json")
    if not isinstance(text, str):
        return False, "out/result.json was not written"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return False, f"out/result.json is not JSON: {exc}"
    if not isinstance(data.get("words"), int):
        return False, "out/result.json has no integer `words`"
    return True, f"out/result.json holds words={data['words']}"
