"""``phux status``, ``phux doctor`` and ``phux audit``: the server, the setup, the input record."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from phux.cli import help as texts
from phux.cli.actions import deadline_after, finish, reporting
from phux.cli.complete import complete_target
from phux.cli.options import Verb, deadline_option, json_option, open_client, socket_option
from phux.cli.render import to_json, write_out

if TYPE_CHECKING:
    from phux.client.models import AuditEntry, DoctorReport, ServerStatus


def _epilog(*parts: str) -> str:
    return texts.epilog(*parts, texts.SOCKET)


def _duration(seconds: float) -> str:
    s = int(seconds)
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d {hours:02d}h {minutes:02d}m"
    if hours:
        return f"{hours}h {minutes:02d}m {s:02d}s"
    return f"{minutes}m {s:02d}s" if minutes else f"{s}s"


def _utc(ms: int) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000))
    return f"{stamp}.{ms % 1000:03d} UTC"


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def _memory(st: ServerStatus) -> str:
    if st.rss_bytes is None:
        return "(unknown: the server is not on this machine)"
    text = f"{_mib(st.rss_bytes)} resident (the server process)"
    if st.replica_rss_bytes is not None:
        pids = ", ".join(map(str, st.replica_pids))
        total = _mib(st.rss_bytes + st.replica_rss_bytes)
        text += f" + {_mib(st.replica_rss_bytes)} (replica process {pids}) = {total}"
    elif st.replica_pids:
        text += " + (replica process unreadable)"
    return text


def status_text(st: ServerStatus) -> str:
    unknown = "(not published by this server)"
    rows = [
        ("server", f"pid {st.pid}, phux {st.version or '?'}, protocol {st.protocol}"),
        ("socket", st.socket if st.host is None else f"{st.socket} on {st.host}"),
        (
            "uptime",
            unknown
            if st.uptime_s is None or st.started_ms is None
            else f"{_duration(st.uptime_s)} (since {_utc(st.started_ms)[:-8]} UTC)",
        ),
        ("terminals", str(st.terminals)),
        ("clients", unknown if st.clients is None else f"{st.clients} (counting this one)"),
        ("replicas", st.replicas or unknown),
        ("memory", _memory(st)),
        ("audit", st.audit_file or "(none)"),
    ]
    return "".join(f"{name:<10} {value}\n" for name, value in rows)


@click.command(
    "status",
    cls=Verb,
    short_help="Show the running server: pid, uptime, terminals, clients, memory.",
    epilog=_epilog(
        texts.exit_codes(("0", "a server is running"), ("1", "no server / failure")),
        texts.JSON_ERRORS,
    ),
)
@json_option("Print ServerStatus JSON (spec/schemas/server_status.schema.json).")
@deadline_option
@socket_option
def status_cmd(as_json: bool, timeout: float, socket: str | None) -> None:
    """Show the running server: pid, versions, socket, uptime, how many terminals
    and clients, where replicas run, its memory and its audit file.

    Never starts a server: with none running it says so and exits 1.
    """
    with reporting("status", as_json), open_client(socket) as client:
        from phux.client.server_info import server_status

        st = server_status(client, deadline_after(timeout))
    write_out(to_json(st) + "\n" if as_json else status_text(st))


def doctor_text(report: DoctorReport) -> str:
    lines = []
    for check in report.checks:
        lines.append(f"{check.status:<8} {check.name:<18} {check.message}\n")
        if check.remedy:
            lines.append(f"{'':<8} {'':<18} remedy: {check.remedy}\n")
    return "".join(lines)


@click.command(
    "doctor",
    cls=Verb,
    short_help="Check this machine's phux setup; each problem with its remedy.",
    epilog=_epilog(
        texts.exit_codes(
            ("0", "no failure (warnings, if any, are printed)"),
            ("1", "some check failed: phux cannot work as things are"),
        ),
    ),
)
@json_option("Print DoctorReport JSON (spec/schemas/doctor_report.schema.json).")
@deadline_option
@socket_option
def doctor_cmd(as_json: bool, timeout: float, socket: str | None) -> None:
    """Check the socket directory's owner and mode, a stale socket, the shell
    integration scripts and shells, ssh and tmux, and a running server's
    version against this client's. Never starts a server.
    """
    import os

    host = os.environ.get("PHUX_HOST")
    if host:
        raise click.UsageError(f"doctor checks this machine; run `ssh {host} phux doctor`")
    with reporting("doctor", as_json):
        from phux.client.doctor import doctor

        report = doctor(socket, deadline_after(timeout))
    write_out(to_json(report) + "\n" if as_json else doctor_text(report))
    if not report.ok:
        finish(1)


def audit_line(entry: AuditEntry) -> str:
    where = f"@{entry.terminal}" + (f" {entry.target}" if entry.target else "")
    text = (
        f"{_utc(entry.time_ms)}  {where}  {entry.client or '?'}  pid {entry.pid} uid {entry.uid}"
        f"  {entry.bytes} bytes  sha256:{entry.sha256[:16]}"
    )
    if entry.data_base64 is not None:
        import base64

        data = base64.b64decode(entry.data_base64)
        text += "  " + repr(data)[1:]
    return text + "\n"


@click.command(
    "audit",
    cls=Verb,
    short_help="Show who wrote input to a pane, and when.",
    epilog=_epilog(
        texts.TARGET_GRAMMAR,
        texts.exit_codes(
            ("0", "shown (possibly no entries)"),
            ("1", "no server (with TARGET) / target not found / no audit kept"),
        ),
        texts.JSON_ERRORS,
    ),
)
@json_option("Print AuditResult JSON (spec/schemas/audit_result.schema.json).")
@click.option(
    "--last",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Only the newest N entries.",
)
@click.option(
    "--since",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECS",
    help="Only entries of the last SECS seconds.",
)
@deadline_option
@socket_option
@click.argument("target", required=False, shell_complete=complete_target)
def audit_cmd(
    as_json: bool,
    last: int | None,
    since: float | None,
    timeout: float,
    socket: str | None,
    target: str | None,
) -> None:
    """Show the input audit of TARGET's pane: each INPUT with its time, the
    client's name (from its HELLO), pid and uid, the byte count and SHA-256
    (and the bytes, when the server runs with --audit-data).

    Without TARGET, every entry the audit holds, of every pane and every
    server run, oldest first (entries outlive the server; the file rotates by
    size). A running server sends the entries, also over --host; with no
    server running, phux reads this machine's audit file itself (TARGET then
    names nothing). Never starts a server.
    """
    since_ms = 0 if since is None else max(0, time.time_ns() // 1_000_000 - int(since * 1000))
    with reporting("audit", as_json), open_client(socket) as client:
        from phux.client.server_info import audit

        result = audit(client, target, deadline_after(timeout), last=last, since_ms=since_ms)
    if as_json:
        write_out(to_json(result) + "\n")
        return
    where = "on this machine" if result.host is None else f"on {result.host}"
    lines = [f"# {result.audit_file} ({where})\n"]
    if result.truncated:
        lines.append("# older entries left out (the server answers at most so many at once)\n")
    lines += [audit_line(e) for e in result.entries]
    write_out("".join(lines))
