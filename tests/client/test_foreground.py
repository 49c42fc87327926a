"""The foreground as the client library carries it: Pane.foreground from the listing,
Mirror.foreground from TERMINAL_STATE (a real server, a real bash)."""

from __future__ import annotations

from phux.client import Client, Deadline

from .conftest import new_shell


def test_a_pane_and_its_mirror_carry_the_foreground(client: Client) -> None:
    name = new_shell(client)
    pane = client.resolve(name, Deadline.after(5))
    assert pane.foreground is not None
    assert (pane.foreground.pgrp, pane.foreground.name) == (pane.pid, "bash")
    mirror = client.mirror(pane, Deadline.after(10))
    try:
        client.send_keys(name, ["sleep 30", "Enter"], Deadline.after(5))
        deadline = Deadline.after(10)
        while mirror.foreground is None or mirror.foreground.name != "sleep":
            client.pump(deadline)
        assert mirror.foreground_known and mirror.foreground.pgrp != pane.pid
        assert mirror.foreground.argv == ["sleep", "30"]
        listed = client.resolve(name, Deadline.after(5)).foreground
        assert listed == mirror.foreground
        client.send_keys(name, ["C-c"], Deadline.after(5))
        while mirror.foreground.pgrp != pane.pid:
            client.pump(deadline)
    finally:
        client.release(mirror)
