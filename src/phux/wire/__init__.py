"""phux.wire layer (see ARCHITECTURE.md)."""
