"""phux.client layer (see ARCHITECTURE.md)."""
