"""Runs in the grading process: finds the protections, starts the template inside bubblewrap, and
reads each submission's untrusted reports."""
