"""A small program that starts one of everything (a test fixture for shutdown-lint map)."""
