"""What becomes of every little-loops key: the single table the converter and the docs share.

`FATES[(place, key)]` says whether a key is kept, renamed, converted or dropped, and why.
The converter reports each dropped key per file with its `why`; `docs/migrating.md` lists the
same table (a test keeps the two in step). Places: `loop` (top level), `state`, `evaluate`,
`llm`, `parameter`, `library` (a fragment library file).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Fate = Literal["kept", "renamed", "converted", "dropped"]


@dataclass(frozen=True)
class KeyFate:
    """One key of the reference format and what `ll-loop migrate` does with it."""

    place: str
    key: str
    fate: Fate
    becomes: str  # what it turns into (for kept/renamed/converted), or "" when dropped
    why: str = ""  # a dropped key's reason, said in the per-file report


def _kept(place: str, *keys: str) -> list[KeyFate]:
    return [KeyFate(place, key, "kept", f"`{key}`") for key in keys]


_NO_HANDOFF = "a run never hands its work to another session; it ends at a terminal or a budget"
_RATE_LIMITS = (
    "LLM calls are retried with backoff by the client and then become the error verdict; "
    "there is no per-state rate-limit ladder"
)
_GUARD = "no equivalent guard: review the loop's actions yourself"
# little-loops lint opt-outs that match an ll-loop rule: flag -> the rule it suppresses
LINT_FLAGS = {
    "evidence_contract_ok": "MR-8",
    "capture_reachability_ok": "LL031",
    "terminal_action_ok": "LL010",
    "unsafe_context_interpolation_ok": "LL032",
}
_LINT_FLAG = "a little-loops lint opt-out that no ll-loop rule matches"

_TABLE: list[KeyFate] = [
    *_kept("loop", "name", "description", "initial", "states", "context", "timeout"),
    *_kept("loop", "default_timeout", "on_max_steps", "category", "labels", "scope"),
    KeyFate("loop", "max_steps", "converted", "`max_steps` (steps are executions of states)"),
    KeyFate(
        "loop", "max_iterations", "converted",
        "without `max_steps`: `max_steps` = N passes × the working states (little-loops read it "
        "as N steps); beside `max_steps` it is dropped",
        "with max_steps it capped maintain-mode restarts, which do not exist here",
    ),
    KeyFate("loop", "on_max_iterations", "dropped", "", "maintain-mode restarts do not exist"),
    KeyFate(
        "loop", "parameters", "converted",
        "`parameters` (`enum` → string with `enum`, `path` and `boolean` → string, "
        "`values` → `enum`)",
    ),
    KeyFate("loop", "input_key", "converted", "`input_key` plus a parameter of that name"),
    KeyFate("loop", "required_inputs", "converted", "required `parameters`"),
    KeyFate("loop", "llm", "converted", "`llm` (model, max_tokens, timeout)"),
    KeyFate("loop", "import", "converted", "`import` of the converted fragment libraries"),
    KeyFate("loop", "fragments", "converted", "`fragments` (converted like states)"),
    KeyFate("loop", "from", "converted", "the parent's keys merged in (no inheritance here)"),
    KeyFate("loop", "flow", "converted", "states with `next:` / `on_yes:` / `on_no:`"),
    KeyFate("loop", "state_defs", "converted", "merged into the states `flow:` generates"),
    KeyFate("loop", "on_handoff", "dropped", "", _NO_HANDOFF),
    KeyFate("loop", "visibility", "dropped", "", "every loop is listed; use category or labels"),
    KeyFate("loop", "circuit", "dropped", "",
            "no repeated-failure circuit; bound cycles with max_retries + on_retry_exhausted"),
    KeyFate("loop", "backoff", "dropped", "", "states run back to back; sleep in an action"),
    KeyFate("loop", "maintain", "dropped", "", "a run ends at its terminal; schedule reruns"),
    KeyFate("loop", "max_edge_revisits", "dropped", "",
            "max_steps bounds every cycle (little-loops stopped at 100 even unwritten)"),
    KeyFate("loop", "default_idle_timeout", "dropped", "", "no idle timeout; timeouts are wall"),
    KeyFate("loop", "singleton", "dropped", "", "runs are serialised by their scope lock"),
    KeyFate("loop", "config", "dropped", "", "per-loop overrides of little-loops settings"),
    KeyFate("loop", "commands", "dropped", "", "documentation only in little-loops"),
    KeyFate("loop", "targets", "dropped", "", "harness optimiser targets are not a loop key here"),
    KeyFate("loop", "host_guard", "dropped", "", "no host memory guard"),
    KeyFate("loop", "prompt_size_guard", "dropped", "", "no prompt size guard"),
    KeyFate("loop", "pruning_profile", "dropped", "", "agent context pruning is the CLI's own"),
    KeyFate("loop", "tamper_guard", "dropped", "", _GUARD),
    KeyFate("loop", "prepatch_check", "dropped", "", _GUARD),
    KeyFate("loop", "session_mode", "dropped", "", "each prompt runs in a fresh agent session"),
    KeyFate("loop", "artifact_versioning", "dropped", "", "a lint setting of little-loops"),
    *[
        KeyFate("loop", flag, "converted", f"a `lint:` suppression of {code}")
        for flag, code in LINT_FLAGS.items()
    ],
    *[
        KeyFate("loop", flag, "dropped", "", _LINT_FLAG)
        for flag in (
            "meta_self_eval_ok", "shared_state_ok", "partial_route_ok", "artifact_versioning_ok",
            "generator_fix_ok", "bash_default_ok", "shell_pid_ok", "parse_swallow_ok",
            "policy_dims_scored_ok", "pruning_profile_ok", "haiku_generator_ok",
            "abandonment_verdict_ok", "evaluate_unknown_keys_ok", "tamper_guard_ok",
            "prepatch_check_ok", "session_mode_ok",
        )
    ],
    *_kept("state", "action", "description", "next", "capture", "timeout", "loop", "with"),
    *_kept("state", "on_yes", "on_no", "on_error", "on_partial", "on_blocked", "route"),
    KeyFate("state", "max_retries", "converted",
            "kept where the state routes to itself, else dropped (little-loops counted only "
            "consecutive re-entries)"),
    *_kept("state", "on_retry_exhausted", "fragment", "evaluate"),
    KeyFate("state", "terminal", "converted",
            "`terminal` (`failure: true` added for the names little-loops treats as failures)"),
    KeyFate("state", "failure", "kept", "`failure`"),
    KeyFate("state", "on_success", "renamed", "`on_yes`"),
    KeyFate("state", "on_failure", "renamed", "`on_no`"),
    KeyFate("state", "on_<verdict>", "converted",
            "`on_<verdict>` when the evaluator can produce it, else dropped (it never fired)"),
    KeyFate("state", "action_type", "converted",
            "`shell` kept; `prompt` and `slash_command` → `prompt` run by the agent CLI "
            "(`llm.runner: cmd:claude ... -p`); `mcp_tool` → a prompt asking the agent to call "
            "the tool"),
    KeyFate("state", "model", "converted", "`model`, and `--model` on the agent CLI"),
    KeyFate("state", "agent", "converted", "`--agent` on the state's agent CLI runner"),
    KeyFate("state", "tools", "converted", "`--tools` on the state's agent CLI runner"),
    KeyFate("state", "params", "converted", "the arguments in the mcp_tool prompt"),
    KeyFate("state", "context_passthrough", "converted",
            "`with:` binding each context key the child reads, does not set itself and the "
            "parent has"),
    KeyFate("state", "on_maintain", "dropped", "", "maintain-mode restarts do not exist"),
    KeyFate("state", "idle_timeout", "dropped", "", "no idle timeout; timeout bounds the action"),
    KeyFate("state", "append_to_messages", "dropped", "", "no shared message log"),
    KeyFate("state", "retryable_exit_codes", "converted",
            "a state `NAME_exit_code` after `error` that reads the exit code (a timeout is 124) "
            "and goes to `on_retry_exhausted` for one not listed, else where `error` went"),
    *[
        KeyFate("state", key, "dropped", "", _RATE_LIMITS)
        for key in (
            "max_rate_limit_retries", "on_rate_limit_exhausted",
            "rate_limit_backoff_base_seconds", "rate_limit_max_wait_seconds",
            "rate_limit_long_wait_ladder",
        )
    ],
    KeyFate("state", "worktree", "dropped", "", "sub-loops run in the caller's work tree"),
    KeyFate("state", "request_path", "dropped", "", "prompts go through the runner"),
    KeyFate("state", "throttle", "dropped", "", "no tool-call throttle"),
    KeyFate("state", "on_throttle_hard", "dropped", "", "no tool-call throttle"),
    KeyFate("state", "cost_ceiling", "dropped", "", "use the loop's max_cost_usd"),
    KeyFate("state", "pruning_profile", "dropped", "", "agent context pruning is the CLI's own"),
    KeyFate("state", "tamper_guard", "dropped", "", _GUARD),
    KeyFate("state", "prepatch_check", "dropped", "", _GUARD),
    KeyFate("state", "session_mode", "dropped", "", "each prompt runs in a fresh agent session"),
    KeyFate("state", "effort", "dropped", "", "reasoning effort is the agent CLI's setting"),
    KeyFate("state", "type", "dropped", "", "state types (learning) have no equivalent"),
    KeyFate("state", "learning", "dropped", "", "learning-test gates have no equivalent"),
    *_kept("evaluate", "type", "pattern", "negate", "operator", "target", "previous"),
    *_kept("evaluate", "direction", "source", "prompt", "max_stall"),
    KeyFate("evaluate", "min_confidence", "converted",
            "`min_confidence: 0` on every judge (little-loops' verdict never depended on its "
            "confidence); kept only beside uncertain_suffix"),
    KeyFate("evaluate", "path", "converted", "`path` with a leading dot"),
    KeyFate("evaluate", "tolerance", "converted", "`tolerance` (a number; a context value is "
            "inlined)"),
    KeyFate("evaluate", "scope", "kept", "`scope` (diff_stall)"),
    KeyFate("evaluate", "line", "converted", "`line: first|last` (a numeric index is dropped)"),
    KeyFate("evaluate", "schema", "converted",
            "with a verdict enum, a prompt state (`NAME_judge` after a state with an action) "
            "asks an agent for one of its verdicts on the last line, read by classify and "
            "routed as before; without one, dropped (the judge's answer schema is fixed)"),
    KeyFate("evaluate", "uncertain_suffix", "dropped", "",
            "low confidence (below min_confidence) is the cannot_judge verdict"),
    KeyFate("evaluate", "error_patterns", "converted", "on output_contains, a state of its own "
            "(`NAME_error_patterns`) after `no` that looks for them in the output and goes where "
            "`error` went when one is there"),
    KeyFate("evaluate", "key", "converted",
            "on output_numeric, a state `NAME_key` after the action that prints the number of "
            "the last `key=<number>` in its output and judges it"),
    KeyFate("evaluate", "history_file", "converted", "the file the score_stall check reads"),
    KeyFate("evaluate", "epsilon", "converted", "the margin in the score_stall check"),
    *[
        KeyFate("evaluate", key, "dropped", "", "its evaluator type has no equivalent")
        for key in ("track", "max_repeat", "baseline_path", "auto_promote", "min_pairs", "pairs")
    ],
    KeyFate("llm", "model", "kept", "`llm.model`"),
    KeyFate("llm", "max_tokens", "kept", "`llm.max_tokens`"),
    KeyFate("llm", "timeout", "kept", "`llm.timeout`"),
    KeyFate("llm", "enabled", "dropped", "", "judges always run; remove llm_structured to skip"),
    KeyFate("llm", "effort", "dropped", "", "reasoning effort is the agent CLI's setting"),
    *_kept("parameter", "required", "default", "description"),
    KeyFate("parameter", "type", "converted",
            "`type` (`enum`, `path` and `boolean` become `string`)"),
    KeyFate("parameter", "values", "renamed", "`enum`"),
    KeyFate("library", "fragments", "converted", "`fragments` (each converted like a state)"),
]  # fmt: skip

FATES: dict[tuple[str, str], KeyFate] = {(f.place, f.key): f for f in _TABLE}

# Evaluator types and what becomes of them (a type not here is converted as it is).
EVALUATOR_FATES: dict[str, str] = {
    "exit_code": "exit_code",
    "output_contains": "output_contains",
    "output_numeric": "output_numeric",
    "output_json": "output_json",
    "convergence": "convergence",
    "classify": "classify, with the route keys declared (lower case) as its verdicts",
    "llm_structured": "llm_structured with `ignore_exit_code: true` (a default prompt when it "
    "had none)",
    "diff_stall": "diff_stall with `ignore_exit_code: true`; on_yes → on_progress, on_no → "
    "on_stall",
    "score_stall": "a shell check of the score history file whose exit code is the verdict "
    "(0: still improving, 1: plateau), computed as little-loops computed it",
    "open_question_stall": "the same shell check, lower counts being better",
    "action_stall": "not converted: no equivalent",
    "mcp_result": "on an mcp_tool state (its default there): classify of the verdict the agent "
    "prints last (success, tool_error, not_found, timeout); elsewhere not converted",
    "harbor_scorer": "the state captures the scorer's output and goes on to a state NAME_score "
    "whose exit code is the verdict: exit 0 and a number printed (a Python float) yes, another "
    "exit no, a timeout or no number error",
    "comparator": "not converted: no equivalent",
    "contract": "not converted: no equivalent",
}


def fate(place: str, key: str) -> KeyFate | None:
    """What becomes of `key` at `place`, if the reference format has it."""
    return FATES.get((place, key))


def table() -> list[KeyFate]:
    """Every key, in documentation order."""
    return list(_TABLE)
