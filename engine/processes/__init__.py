"""Child processes bounded in time and output, and the signals that end their groups (IO).

`group.run_process` runs the agent CLIs of `cmd:` prompt runners and every `ll-harness`
subject; shell actions have their own faster runner (`engine.runtime.actions`), which shares
`output_cap` and `signal_group` from here.
"""
