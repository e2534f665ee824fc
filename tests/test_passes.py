"""The recursion's two pass forms (`softrigid._passes`): in world axes as sums, and
sequentially in each link's frame, agree on random chains, and at identity poses."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from softrigid._passes import (
    backward_pass,
    backward_sums,
    forward_pass,
    forward_sums,
    frame_poses,
)


def _chain(seed: int, n: int, identity: bool = False) -> tuple[jax.Array, ...]:
    rng = np.random.default_rng(seed)
    rot = np.stack(
        [np.eye(3) if identity else Rotation.random(random_state=rng).as_matrix() for _ in range(n)]
    )
    vectors = rng.normal(size=(7, n, 3))
    return (jnp.asarray(rot), *(jnp.asarray(v) for v in vectors))


@pytest.mark.parametrize("n, identity", [(1, False), (7, False), (5, True)])
def test_sums_equal_the_sequential_passes(n, identity):
    rot, trans, w_rel, v_rel, a_rel, dw_rel, force, moment = _chain(n, n, identity)
    a0 = jnp.array([0.3, -0.2, 9.81])
    frames = frame_poses(rot, trans)
    seq = forward_pass(rot, trans, w_rel, v_rel, a_rel, dw_rel, a0)
    world = forward_sums(frames, trans, w_rel, v_rel, a_rel, dw_rel, a0)
    for x, y in zip(seq, world):
        np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-12 * float(jnp.abs(x).max()))
    for x, y in zip(backward_pass(rot, trans, force, moment), backward_sums(frames, force, moment)):
        np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-12 * float(jnp.abs(x).max()))


def test_frame_poses_are_the_products_of_the_link_poses():
    rot, trans, *_ = _chain(3, 6)
    prox, dist, origin = frame_poses(rot, trans)
    r, t = np.eye(3), np.zeros(3)
    for i in range(6):
        np.testing.assert_allclose(prox[i], r, atol=1e-14)
        r, t = r @ np.asarray(rot[i]), t + r @ np.asarray(trans[i])
        np.testing.assert_allclose(dist[i], r, atol=1e-14)
        np.testing.assert_allclose(origin[i], t, atol=1e-14)
