"""phux.tui layer (see ARCHITECTURE.md)."""
