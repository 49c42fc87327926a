"""The quick path's option table (see ``phux.cli.quick``).

Generated from the click commands in ``phux.cli.verbs`` by
``python -m tools.gen_quick_table``; do not edit.
"""

from __future__ import annotations

FLAG, TEXT, SECONDS, SECONDS_OR_ZERO, COUNT, SCROLLBACK = range(6)

OPTIONS = {
    "snapshot": {
        "--json": ("as_json", FLAG),
        "--scrollback": ("scrollback", SCROLLBACK),
        "--cells": ("cells", FLAG),
        "--timeout": ("timeout", SECONDS),
        "--socket": ("socket", TEXT),
    },
    "send-keys": {
        "--literal": ("literal", FLAG),
        "--timeout": ("timeout", SECONDS),
        "--socket": ("socket", TEXT),
    },
    "run": {
        "--timeout": ("timeout", SECONDS),
        "--json": ("as_json", FLAG),
        "--force": ("force", FLAG),
        "--socket": ("socket", TEXT),
    },
    "wait": {
        "--until": ("until", TEXT),
        "--regex": ("regex", TEXT),
        "--idle": ("idle", COUNT),
        "--prompt": ("prompt", FLAG),
        "--exit": ("exit_", FLAG),
        "--timeout": ("timeout", SECONDS_OR_ZERO),
        "--json": ("as_json", FLAG),
        "--socket": ("socket", TEXT),
    },
}
"""Per verb: the long options the quick path decides, as (destination, kind)."""

DEFAULTS = {
    "snapshot": {
        "as_json": False,
        "scrollback": None,
        "cells": False,
        "schema_version": None,
        "timeout": 10.0,
        "socket": None,
    },
    "send-keys": {
        "literal": False,
        "timeout": 10.0,
        "socket": None,
    },
    "run": {
        "timeout": 30.0,
        "as_json": False,
        "force": False,
        "socket": None,
    },
    "wait": {
        "until": None,
        "regex": None,
        "idle": None,
        "prompt": False,
        "exit_": False,
        "timeout": 30.0,
        "as_json": False,
        "socket": None,
    },
}
"""Per verb: the value click passes for each option not given."""

LAYOUT = {
    "snapshot": (False, None),
    "send-keys": (True, "keys"),
    "run": (True, "cmd"),
    "wait": (False, None),
}
"""Per verb: (TARGET is required, the name of the trailing KEYS/CMD argument or None)."""
