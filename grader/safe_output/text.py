"""Student-controlled text made safe to print in a terminal and to open in a spreadsheet."""

SHORT_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _escape(char: str) -> str:
    if char in SHORT_ESCAPES:
        return SHORT_ESCAPES[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_safe(text: str) -> str:
    """`text` with every unprintable character (as `repr` sees them) and backslash escaped."""
    return "".join(c if c.isprintable() and c != "\\" else _escape(c) for c in str(text))


def csv_safe(value):
    """A CSV cell: text escaped as in `terminal_safe` and never read as a formula; others as is."""
    if not isinstance(value, str):
        return value
    return ("'" if value.startswith(FORMULA_STARTS) else "") + terminal_safe(value)
