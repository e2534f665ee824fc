"""The recursion's passes over the links (`algorithm.md`), in two equivalent forms.

**In each link's own frame, sequentially** (the seed's Algorithms 1–2; `forward_pass`,
`backward_pass`): one `lax.scan` per pass whose step rotates the previous link's motion (or the
next link's wrench) into the current frame. Used where many right-hand sides go through the
passes at once (the mass matrix's `n` unit accelerations): each step's small kernels are then
shared by all of them.

**In world axes, as sums** (`forward_sums`, `backward_sums`): every relative quantity of link
`i`, given in `S_{i−1}`, is rotated into world axes by the proximal frame's rotation
`R_{0,i−1}` (`frame_poses`: the one sequential product left). Cross products commute with
rotations, so with `x_{j−1}` the quantity of the previous link (`x_0 = 0`, `a_0` the base
acceleration) the recursions become prefix sums:

    ω_i = Σ_{j≤i} ω_rel,j
    ω̇_i = Σ_{j≤i} (ω_{j−1} × ω_rel,j + ω̇_rel,j)
    a_i = a_0 + Σ_{j≤i} (ω̇_{j−1} × t_j + ω_{j−1} × (ω_{j−1} × t_j) + 2 ω_{j−1} × v_rel,j + a_rel,j)

and from the tip in, with `o_i = Σ_{j≤i} t_j` the origin of `S_i`,

    F_i = Σ_{j≥i} F*_j,    T_i = Σ_{j≥i} (T*_j + o_j × F*_j) − o_i × F_i

(`T` about the origin of `S_i`). Each line is one vectorized expression and one prefix sum (a
scan of one addition per link), where the sequential step runs about fifteen small kernels
per link. Used for one evaluation (inverse dynamics, its bias terms) and for the dynamics
Jacobians' tangents: under a `vmap` of tangents, XLA:CPU (jaxlib 0.10) turned the sequential
scans' inputs (the Jacobians contracted with one-hot tangents) into batched `dot`s with the
scan's stacking transpose folded into an output layout its emitter rejects, aborting the
process (`inverse_dynamics_derivatives` on chains of identical soft links). With the sums those
inputs are rotated elementwise first, and the sweep of body families in the README runs; that
this is why is an observation, not a guarantee of XLA's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from ._math import matmul, matvec, rmatvec

__all__ = [
    "LinkMotion",
    "backward_pass",
    "backward_sums",
    "forward_pass",
    "forward_sums",
    "frame_poses",
    "link_velocities",
]


class LinkMotion(NamedTuple):
    """Motion of every distal frame `S_i`, in `S_i` (N, 3) each (`a`, `dw` `None` for zero in
    `body_terms`)."""

    w: Array  # ω_i
    a: Array | None  # a_i, acceleration of the origin
    dw: Array | None  # ω̇_i


# ---------------------------------------------------------------------------------------------
# In each link's frame, sequentially


def forward_pass(
    rot: Array, trans: Array, w_rel: Array, v_rel: Array, a_rel: Array, dw_rel: Array, a0: Array
) -> LinkMotion:
    """Link accelerations from the base out, given the poses `(R_i, t_i)`, the relative
    velocities and accelerations `a_rel = (∂t/∂q) q̈ + ∂²t[q̇, q̇]`,
    `ω̇_rel = G q̈ + vee(∂²R[q̇, q̇] Rᵀ)` and `a_0`."""

    def step(carry: tuple[Array, Array, Array], x: tuple[Array, ...]) -> Any:
        w, a, dw = carry
        r, t, wr, vr, ar, dwr = x
        # a_i  = Rᵀ (a_{i−1} + ω̇_{i−1} × t + ω_{i−1} × (ω_{i−1} × t) + 2 ω_{i−1} × v_rel + a_rel)
        a_new = rmatvec(
            r, a + jnp.cross(dw, t) + jnp.cross(w, jnp.cross(w, t)) + 2.0 * jnp.cross(w, vr) + ar
        )
        # ω̇_i = Rᵀ (ω̇_{i−1} + ω_{i−1} × ω_rel + ω̇_rel)
        dw_new = rmatvec(r, dw + jnp.cross(w, wr) + dwr)
        # ω_i  = Rᵀ (ω_{i−1} + ω_rel)
        w_new = rmatvec(r, w + wr)
        new = (w_new, a_new, dw_new)
        return new, new

    zero = jnp.zeros(3, dtype=rot.dtype)
    xs = (rot, trans, w_rel, v_rel, a_rel, dw_rel)
    return LinkMotion(*jax.lax.scan(step, (zero, a0.astype(zero.dtype), zero), xs)[1])


def backward_pass(rot: Array, trans: Array, force: Array, moment: Array) -> tuple[Array, Array]:
    """Transmitted wrenches from the tip in, given the resultants `F*_i`, `T*_i` `(N, 3)`:
    `F_i = F*_i + R_{i+1} F_{i+1}`, `T_i = T*_i + R_{i+1} T_{i+1} + t_{i+1} × (R_{i+1} F_{i+1})`.

    Returns `(R_i F_i, R_i T_i)` `(N, 3)`: the wrenches in `S_{i−1}` axes, as the projection
    uses them."""

    def step(carry: tuple[Array, Array], x: tuple[Array, ...]) -> Any:
        f_child, m_child = carry
        fs, ms, r, t = x
        f_i = fs + f_child
        m_i = ms + m_child
        rf, rm = matvec(r, f_i), matvec(r, m_i)
        return (rf, rm + jnp.cross(t, rf)), (rf, rm)

    zero = jnp.zeros(3, dtype=rot.dtype)
    return jax.lax.scan(step, (zero, zero), (force, moment, rot, trans), reverse=True)[1]


def link_velocities(rot: Array, trans: Array, v_rel: Array, w_rel: Array) -> tuple[Array, Array]:
    """Velocity `v_i` of the origin of `S_i` and angular velocity `ω_i`, in `S_i` (N, 3), from
    the relative velocities `(v_rel, ω_rel)`."""

    def step(carry: tuple[Array, Array], x: tuple[Array, ...]) -> Any:
        v, w = carry
        r, t, wr, vr = x
        # v_i = Rᵀ (v_{i−1} + ω_{i−1} × t + v_rel),  ω_i = Rᵀ (ω_{i−1} + ω_rel)
        new = (rmatvec(r, v + jnp.cross(w, t) + vr), rmatvec(r, w + wr))
        return new, new

    zero = jnp.zeros(3, dtype=rot.dtype)
    return jax.lax.scan(step, (zero, zero), (rot, trans, w_rel, v_rel))[1]


# ---------------------------------------------------------------------------------------------
# In world axes, as sums


def frame_poses(rot: Array, trans: Array) -> tuple[Array, Array, Array]:
    """World rotations of the proximal and distal frames and the distal frames' origins,
    `(R_{0,i−1}, R_0i, o_i)`, with `R_0i = R_{0,i−1} R_i`, `o_i = o_{i−1} + R_{0,i−1} t_i`."""

    def step(carry: tuple[Array, Array], x: tuple[Array, Array]) -> Any:
        rw, ow = carry
        r, t = x
        new = (matmul(rw, r), ow + matvec(rw, t))
        return new, new

    eye = jnp.eye(3, dtype=rot.dtype)
    dist, origin = jax.lax.scan(step, (eye, jnp.zeros(3, rot.dtype)), (rot, trans))[1]
    return jnp.concatenate([eye[None], dist[:-1]]), dist, origin


# `r_i v_i` and `r_iᵀ v_i` for stacks `r (N, 3, 3)`, `v (N, 3)`: elementwise (fused)
_rotate, _unrotate = jax.vmap(matvec), jax.vmap(rmatvec)


def _sum_to(x: Array, reverse: bool = False) -> Array:
    """`Σ_{j≤i} x_j` (`Σ_{j≥i}` with `reverse`) along the links: a scan of additions (XLA:CPU's
    `cumsum` is a windowed reduction, `O(N²)`, and measured slower here at 20–100 links)."""

    def step(total: Array, xi: Array) -> Any:
        total = total + xi
        return total, total

    return jax.lax.scan(step, jnp.zeros_like(x[0]), x, reverse=reverse)[1]


def forward_sums(
    frames: tuple[Array, Array, Array],
    trans: Array,
    w_rel: Array,
    v_rel: Array,
    a_rel: Array,
    dw_rel: Array,
    a0: Array,
) -> LinkMotion:
    """`forward_pass` in world axes (module docstring), given the frames' world poses
    `frame_poses(R, t)`; the motion is returned in each `S_i`, as `forward_pass` does."""
    prox, dist, _ = frames
    t, wr, vr, ar, dwr = (_rotate(prox, x) for x in (trans, w_rel, v_rel, a_rel, dw_rel))
    # ω_i = Σ_{j≤i} ω_rel,j;  ω_{i−1} = ω_i − ω_rel,i
    w = _sum_to(wr)
    w_prev = w - wr
    # ω̇_i = Σ_{j≤i} (ω_{j−1} × ω_rel,j + ω̇_rel,j)
    dw_step = jnp.cross(w_prev, wr) + dwr
    dw = _sum_to(dw_step)
    dw_prev = dw - dw_step
    # a_i = a_0 + Σ_{j≤i} (ω̇_{j−1} × t_j + ω_{j−1} × (ω_{j−1} × t_j) + 2 ω_{j−1} × v_rel,j + a_rel,j)
    a_step = (
        jnp.cross(dw_prev, t)
        + jnp.cross(w_prev, jnp.cross(w_prev, t))
        + 2.0 * jnp.cross(w_prev, vr)
        + ar
    )
    a = a0.astype(t.dtype) + _sum_to(a_step)
    return LinkMotion(_unrotate(dist, w), _unrotate(dist, a), _unrotate(dist, dw))


def backward_sums(
    frames: tuple[Array, Array, Array], force: Array, moment: Array
) -> tuple[Array, Array]:
    """`backward_pass` in world axes (module docstring): `(R_i F_i, R_i T_i)` in `S_{i−1}`
    axes from the resultants `F*_i`, `T*_i` in `S_i`."""
    prox, dist, o = frames
    f, m = _rotate(dist, force), _rotate(dist, moment)
    # F_i = Σ_{j≥i} F*_j,  T_i = Σ_{j≥i} (T*_j + o_j × F*_j) − o_i × F_i  (one sum of both)
    sums = _sum_to(jnp.stack([f, m + jnp.cross(o, f)], 1), reverse=True)
    f_sum, m_sum = sums[:, 0], sums[:, 1] - jnp.cross(o, sums[:, 0])
    return _unrotate(prox, f_sum), _unrotate(prox, m_sum)
