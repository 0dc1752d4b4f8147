"""Reading loop files: YAML with positions, the JSON Schema check, suggestions, packaged
resources, issue files.
"""
