"""Runs inside the sandbox: the template, its lesson servers and attendants, and each submission's
process (`cell_server` is the template's entry point)."""
