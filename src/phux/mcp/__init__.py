"""phux.mcp layer (see ARCHITECTURE.md)."""
