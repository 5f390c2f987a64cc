"""On and at the trust boundary: isolation, the warm cell server and its client, the wire
between them, the cell runner."""
