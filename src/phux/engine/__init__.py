"""phux.engine layer (see ARCHITECTURE.md)."""
