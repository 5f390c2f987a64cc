"""What Python 3.10 lacks of the standard library the kit uses (3.11 has it built in)."""

import datetime
import enum

UTC = datetime.timezone.utc  # datetime.UTC since Python 3.11

if hasattr(enum, "StrEnum"):
    StrEnum = enum.StrEnum  # novermin (Python 3.11 and later only)
else:  # Python 3.10

    class StrEnum(str, enum.Enum):
        """Members are strings, and print as their values."""

        def __str__(self) -> str:
            return str.__str__(self)

        def __format__(self, spec: str) -> str:
            return str.__format__(self, spec)
