"""Test configuration: float64 everywhere (the reference precision of every check)."""

import jax

jax.config.update("jax_enable_x64", True)
