"""A `module` + `function` judge of the agent_eval example: the agent wrote its answer file."""


def wrote_answer(outputs, prefix="subject-answer"):
    text = outputs["files"].get("answer.md", "")
    return text.startswith(prefix), f"answer.md starts with {text[:20]!r}"
