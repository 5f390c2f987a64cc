"""One SQLAlchemy engine per gradebook URL and process.

nbgrader opens a new engine for every Gradebook it makes (several per graded notebook), so each
query is compiled again and a new connection opened; sharing the engine keeps SQLAlchemy's
compiled-statement cache and connection pool. Keyed by process id: a fork makes its own.
"""

import functools
import os

import nbgrader.api
import sqlalchemy


def sqlalchemy_engine(url: str, **options) -> sqlalchemy.Engine:
    """This process's engine for `url`."""
    return _engine(os.getpid(), str(url), tuple(sorted(options.items())))


@functools.cache
def _engine(pid: int, url: str, options: tuple) -> sqlalchemy.Engine:
    return sqlalchemy.create_engine(url, **dict(options))


def share_engines_with_nbgrader() -> None:
    """Make nbgrader's Gradebook use `sqlalchemy_engine` instead of a new engine each time."""
    nbgrader.api.create_engine = sqlalchemy_engine
