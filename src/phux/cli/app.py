"""The click command group of ``phux``: every verb, its options and its help.

Loaded by :func:`phux.cli.main.run_cli` for whatever the quick path
(:mod:`phux.cli.quick`) does not take: help, usage errors, and the verbs that
are not on the quick path.
"""

from __future__ import annotations

import click

from phux import __version__
from phux.cli.attach_cmd import attach_cmd
from phux.cli.completion_cmd import completion_cmd
from phux.cli.mcp_cmd import mcp_cmd
from phux.cli.notes_cmd import NOTE_VERBS
from phux.cli.proxy_cmd import proxy_cmd
from phux.cli.record_cmd import record_cmd
from phux.cli.server_cmd import server_cmd
from phux.cli.skill_cmd import skill_cmd
from phux.cli.status_cmd import audit_cmd, doctor_cmd, status_cmd
from phux.cli.verbs import VERBS

HELP = """phux: a terminal server for AI agents and the people beside them.

\b
The agent loop is read -> act -> wait -> read:
  phux new --json -s build
  phux send-keys build 'make test' Enter
  phux wait --until 'passed' --timeout 120 build
  phux snapshot --json --scrollback 200 build
or, when only the exit code and output matter:
  phux run --json build make test

Options may come anywhere, except after the TARGET of `run` and `send-keys`,
whose later words are the command or keys. `phux VERB --help` lists each verb's
options, the TARGET grammar and its exit codes. Agents: read `phux skill` first.
Tab completion: `eval "$(phux completion bash)"` (or zsh, fish).
"""


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    help=HELP,
)
@click.version_option(__version__, prog_name="phux")
def cli() -> None:
    pass


for _verb in (*VERBS, *NOTE_VERBS):
    cli.add_command(_verb)
cli.add_command(server_cmd)
cli.add_command(mcp_cmd)
cli.add_command(attach_cmd)
cli.add_command(proxy_cmd)
cli.add_command(record_cmd)
cli.add_command(skill_cmd)
cli.add_command(completion_cmd)
cli.add_command(status_cmd)
cli.add_command(doctor_cmd)
cli.add_command(audit_cmd)
