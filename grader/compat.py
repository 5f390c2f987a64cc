"""What Python 3.10 lacks of the standard library the kit uses (3.11 has it built in)."""

import datetime
import enum

UTC = datetime.UTC

if hasattr(enum, "StrEnum"):
    StrEnum = enum.StrEnum
else:  # Python 3.10

    class StrEnum(str, enum.Enum):
        """Members are strings, and print as their values."""

        def __str__(self) -> str:
            return str.__str__(self)

        def __format__(self, spec: str) -> str:
            return str.__format__(self, spec)
