"""One SQLAlchemy engine per gradebook URL and process.

nbgrader opens a new engine for every Gradebook it makes (several per graded notebook), so each
query is compiled again and a new connection opened; sharing the engine keeps SQLAlchemy's
compiled-statement cache and connection pool. Keyed by process id: a fork makes its own.
"""

import os

import nbgrader.api
import sqlalchemy

_ENGINES: dict[tuple[int, str], sqlalchemy.Engine] = {}
_create_engine = sqlalchemy.create_engine


def engine(url: str, **options) -> sqlalchemy.Engine:
    """This process's engine for `url`."""
    key = (os.getpid(), str(url))
    if key not in _ENGINES:
        _ENGINES[key] = _create_engine(url, **options)
    return _ENGINES[key]


def share_engines_with_nbgrader() -> None:
    """Make nbgrader's Gradebook use `engine` instead of a new engine each time."""
    nbgrader.api.create_engine = engine
