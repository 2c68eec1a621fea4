"""The CAAM model as a device process, reached through the board's mapped-memory transport."""
