"""`ll-harness`: one-shot and batch measurement with samples, intervals, baselines and history.

Modules, each with one job: `stats` (Wilson intervals), `banding` (samples → one result and its
exit code), `keys` (content, input and conditions hashes), `subjects` (cmd, prompt, loop),
`grading` (exit-code and semantic gates), `baseline` (compare gate, deltas, retry admission),
`session` (one invocation end to end), `tasks` + `dsl` (the batch runner), `history_report`
(rates over recorded attempts), `render`/`render_dsl` (text and JSON).
"""
