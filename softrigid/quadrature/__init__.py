"""Reference volumes and quadrature rules (points and volume weights in material coordinates)."""

from ._rule import QuadratureRule, box, cylinder, segment, tube

__all__ = ["QuadratureRule", "segment", "box", "cylinder", "tube"]
