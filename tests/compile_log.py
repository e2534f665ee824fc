"""The programs XLA compiles inside a block (JAX's compile log), for the tests that check that
an argument is traced: another value must reuse the compiled program."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import jax


class _CompileLog(logging.Handler):
    """The messages of JAX's compile log (`jax.log_compiles`) that name a compilation."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.names: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("Compiling"):
            self.names.append(record.getMessage())


@contextlib.contextmanager
def compilations() -> Iterator[list[str]]:
    """The names of the programs XLA compiles inside the block (JAX's compile log)."""
    handler = _CompileLog()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles():
            yield handler.names
    finally:
        logger.removeHandler(handler)
