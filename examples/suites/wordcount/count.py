"""The subject of the word-count example suite: count the words of the text on stdin.

Prints `N words` and writes out/result.json with the count, as a tool under evaluation would.
"""

import json
import re
import sys
from pathlib import Path

text = sys.stdin.read()
words = re.findall(r"[A-Za-z0-9]+(?:['-][A-Za-z0-9]+)*", text)
out = Path("out")
out.mkdir(exist_ok=True)
(out / "result.json").write_text(json.dumps({"text": text, "words": len(words)}))
print(f"{len(words)} words")
