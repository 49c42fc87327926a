def strip(data: bytes, /) -> bytes | None:
    """``data`` without its SGR, EL and ECH sequences and bells; None if an ESC in it
    starts anything else (or is cut short)."""
