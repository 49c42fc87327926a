"""Hypothesis strategies of floods, shared by the bulk path's and the checkpoints' tests."""

from __future__ import annotations

from hypothesis import strategies as st

# Lines of coloured text as ls --color and logs print them: SGRs (runs, resets,
# extended colours, a malformed one) between pieces of text, CR LF ended; some
# wider than the screen, some exactly as wide, some empty, and now and then
# something the rows built directly do not take (a tab, an OSC, an EL, a wide
# character, a bare line feed, a cut sequence).
_SGRS = st.sampled_from(
    [
        "\x1b[0m",
        "\x1b[m",
        "\x1b[01;34m",
        "\x1b[0m\x1b[01;32m",
        "\x1b[40;33;01m",
        "\x1b[7m",
        "\x1b[38;5;100m",
        "\x1b[48;2;1;2;3m",
        "\x1b[38;5m\x1b[1m",
        "\x1b[38:2::1:2:3m",
        "\x1b[;1m",
        "\x1b[99999m",
    ]
)
_ODD = st.sampled_from(
    ["\t", "\x1b]0;t\x07", "\x1b[K", "\x1b[2X", "中", "\n", "\r", "\x07", "\x1b[3", "\x1b[?5h"]
)
_PIECE = st.text(alphabet=st.sampled_from("abmX0;:[ .-"), max_size=14)
# Text without parameter bytes (digits, ";", ":") or "[": what the bulk path strips fastest.
_NAME = st.text(alphabet=st.sampled_from("abmKX .-"), max_size=14)


@st.composite
def coloured_session(draw: st.DrawFn, digits: bool = True) -> list[bytes | tuple[int, int]]:
    """Coloured lines; ``digits``: whether their text may hold parameter bytes."""
    piece = _PIECE if digits else _NAME
    lines = []
    for _ in range(draw(st.integers(0, 60))):
        pieces = draw(st.lists(st.tuples(_SGRS, piece), max_size=4))
        line = draw(piece) + "".join(a + b for a, b in pieces)
        if draw(st.integers(0, 30)) == 0:
            at = draw(st.integers(0, len(line)))
            line = line[:at] + draw(_ODD) + line[at:]
        lines.append(line + "\r\n")
    return chunked(draw, "".join(lines).encode(), cuts=3, resize_one_in=7)


def chunked(
    draw: st.DrawFn, data: bytes, cuts: int, resize_one_in: int
) -> list[bytes | tuple[int, int]]:
    """``data`` cut in up to ``cuts`` places, a feed per piece, and after about one
    piece in ``resize_one_in`` a resize (cols, rows) of a small screen."""
    at = sorted(draw(st.lists(st.integers(0, len(data)), max_size=cuts)))
    out: list[bytes | tuple[int, int]] = []
    for a, b in zip([0, *at], [*at, len(data)], strict=True):
        out.append(data[a:b])
        if draw(st.integers(0, resize_one_in - 1)) == 0:
            out.append((draw(st.integers(3, 16)), draw(st.integers(1, 7))))
    return out
