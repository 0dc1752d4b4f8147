"""A stand-in for an agent CLI such as `claude -p --output-format stream-json --verbose`.

It reads its prompt on stdin, writes answer.md in its working directory (the case's workspace)
and prints the stream-json events an agent prints, so the suite's record gets the conversation,
the tool calls, the turns and the cost. Swap it for a real agent on the `agent:` line.
"""

import json
import pathlib
import sys

prompt = sys.stdin.read()
task = pathlib.Path("input.yaml").read_text()  # the case's inputs, as a file in the workspace
pathlib.Path("answer.md").write_text("subject-answer: " + prompt.strip() + "\n")
events = [
    {"type": "system", "subtype": "init", "session_id": "s", "tools": ["Write"]},
    {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Writing the answer."},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Write",
                    "input": {"file_path": "answer.md"},
                },
            ],
        },
        "parent_tool_use_id": None,
    },
    {
        "type": "user",
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
        "parent_tool_use_id": None,
    },
    {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "Done: the answer is written."}],
        },
        "parent_tool_use_id": None,
    },
    {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "num_turns": 2,
        "result": "Done: the answer is written.",
        "total_cost_usd": 0.002,
        "usage": {"input_tokens": 50, "output_tokens": 10},
    },
]
for event in events:
    print(json.dumps(event), flush=True)
