def strip(data: bytes, finals: bytes = b"mKX", /) -> bytes | None:
    """``data`` without its bells and its CSIs of parameter bytes only that end in one
    of ``finals`` (SGR, EL and ECH); None if an ESC in it starts anything else (or is
    cut short)."""
