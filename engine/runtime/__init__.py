"""Running a loop: the interpreter, actions, evaluators, sub-loops, the run store, resume,
locks, progress and history.
"""
