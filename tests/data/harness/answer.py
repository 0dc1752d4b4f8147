"""A scripted agent CLI for `--runner cmd:...`: answers a prompt by its `TASK-ID:` line.

Usage: python answer.py ANSWERS.json   (prompt on stdin, answer on stdout)
ANSWERS.json maps a task id to {"text": ..., "sleep": seconds, "exit": code}.
"""

import json
import re
import sys
import time

prompt = sys.stdin.read()
with open(sys.argv[1]) as handle:
    answers = json.load(handle)
match = re.search(r"TASK-ID: (\S+)", prompt)
entry = answers.get(match.group(1) if match else "", {"text": "no task id in the prompt"})
time.sleep(entry.get("sleep", 0))
sys.stdout.write(entry.get("text", ""))
if "contract" in entry:  # echo whether the answer contract was appended
    sys.stdout.write("\nCONTRACT-SEEN" if "Answer contract" in prompt else "\nNO-CONTRACT")
sys.exit(entry.get("exit", 0))
