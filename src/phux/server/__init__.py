"""phux.server layer (see ARCHITECTURE.md)."""
