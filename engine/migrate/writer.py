"""Converted loops as YAML a person can read: keys in the order written, multi-line text as
`|` blocks, and every string that could read as something else quoted."""

from __future__ import annotations

from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    """Block style everywhere; no anchors for repeated values."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    if len(value) > _LONG and value == value.strip():
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=">")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_LONG = 90


_Dumper.add_representer(str, _text)


def dump(data: Any, header: str = "") -> str:
    """The YAML text of `data`, after the `header` comment block (if any)."""
    body = yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
        indent=2,
    )
    return (header.rstrip() + "\n" if header.strip() else "") + body
