"""What makes two measurements comparable: content, input and conditions hashes (pure).

A baseline may only serve a comparison when it measured the same subject input under the same
grading. Every argument that can change a verdict goes into the conditions fingerprint, so a
baseline measured with another judge model, timeout, expected exit code, criterion or sample
count cannot silently stand in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def input_hash(input_text: str | None = None, context: Mapping[str, str] | None = None) -> str:
    """The subject's input (a loop's INPUT and --context pairs); cmd and prompt have none."""
    payload = {"input": input_text, "context": dict(sorted((context or {}).items()))}
    return sha256_text(json.dumps(payload, sort_keys=True))


@dataclass(frozen=True)
class Conditions:
    """Every grading-relevant argument of one invocation."""

    runner: str
    samples: int
    timeout: float | None
    expected_exit_code: int | None
    semantic: str | None
    judge_model: str | None
    subject_model: str | None
    prompt_runner: str | None

    def fingerprint(self) -> str:
        values = asdict(self)
        if self.timeout is not None:
            values["timeout"] = float(self.timeout)  # 10 and 10.0 are the same condition
        return sha256_text(json.dumps(values, sort_keys=True))

    def with_samples(self, samples: int) -> Conditions:
        return Conditions(**{**asdict(self), "samples": samples})
