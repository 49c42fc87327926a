"""The server's global memory bounds (issue 15, item 9), attacked on a real server.

Per-connection and per-terminal caps are not enough when there are many of
them: 1,000 connections each holding a partial 16 MiB frame, or thousands of
terminals each keeping megabytes of journal, add up to gigabytes. Each test
sets a small global bound by environment (as a deployment would) and checks
that whoever would pass it gets a clear answer while everyone else is served.
"""

from __future__ import annotations

from pathlib import Path

from attack.test_server_limits import _ping, _reply, limited_server
from phux.wire import encode_frame
from phux.wire.errors import ErrorCode
from phux.wire.frames import Error, Input, Ping, Pong
from server.harness import RawClient, ServerProcess

KiB = 1024
MiB = 1024 * KiB


def _rss_kib(server: ServerProcess) -> int:
    assert server.proc is not None
    with open(f"/proc/{server.proc.pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))


def _big_input(request_id: int, size: int) -> bytes:
    """An INPUT frame of ``size`` data bytes to a terminal that does not exist: once the
    server has it whole, it answers TERMINAL_NOT_FOUND with this request id."""
    return encode_frame(Input(request_id=request_id, terminal=999, data=b"p" * size))


def test_partial_frames_past_the_global_bound_are_refused_others_carry_on(
    tmp_path: Path,
) -> None:
    holders = 8
    frame_size = 12 * MiB
    held = 11 * MiB  # of each frame, sent and then held back
    bound = 40 * MiB
    with limited_server(tmp_path, PHUX_MAX_PARTIAL_FRAMES=str(bound)) as server:
        normal = RawClient(server.socket)
        normal.hello()
        baseline = _rss_kib(server)
        clients = []
        refused: list[int] = []
        for i in range(holders):
            client = RawClient(server.socket, timeout=10)
            client.hello()
            frame = _big_input(100 + i, frame_size)
            client.send(frame[:held])
            clients.append((client, frame))
            _ping(normal, i)  # the server has taken what it will of each, in order
        # Those whose whole frame fits are admitted; each of the rest is told at once,
        # with the request id of the frame refused, and closed (the frame could be a
        # piece of an input unit, which must not be typed with a hole in it).
        for i, (client, _frame) in enumerate(clients):
            try:
                frame = client.recv(timeout=0.5)
            except TimeoutError:
                continue
            assert isinstance(frame, Error), frame
            assert frame.code == ErrorCode.RESOURCE_EXHAUSTED, frame
            assert frame.request_id == 100 + i, frame
            assert "incomplete" in frame.message and str(bound) in frame.message, frame
            assert client.recv(timeout=5) is None
            refused.append(i)
        admitted = [i for i in range(holders) if i not in refused]
        assert len(admitted) == bound // len(clients[0][1]), (admitted, refused)
        grown = _rss_kib(server) - baseline
        # What the admitted ones hold, not what everyone sent (8 x 11 MiB).
        assert grown < (len(admitted) * held + 16 * MiB) // KiB, grown
        # The admitted ones finish their frames and go on.
        for i in admitted:
            client, frame = clients[i]
            client.send(frame[held:])
            reply = _reply(client, 100 + i, timeout=10)
            assert isinstance(reply, Error) and reply.code == ErrorCode.TERMINAL_NOT_FOUND
            client.send(Ping(token=50 + i))
            pong = client.recv(timeout=10)
            assert isinstance(pong, Pong) and pong.token == 50 + i, pong
        _ping(normal, 99)
        # Once the admitted frames are done, the room is there again.
        late = RawClient(server.socket, timeout=10)
        late.hello()
        late.send(_big_input(7, frame_size))
        reply = _reply(late, 7, timeout=10)
        assert isinstance(reply, Error) and reply.code == ErrorCode.TERMINAL_NOT_FOUND, reply
        for client, _frame in clients:
            client.close()
