"""What the ways in show: the tools' result models (published as their outputSchema)."""
