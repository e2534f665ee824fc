"""A learned body: the kinematics of a soft segment is a small plain-JAX MLP.

Run:  python examples/learned_kinematics.py [output-folder]

The body map is `f(x, q) = x + d(x, q) − d(x, 0)` with `d` a two-layer tanh network of
`(x1/L, x2/L, x3/L, q)` whose weights are traced arrays (`SoftBody(fn, ..., params=weights)`),
so `f(x, 0) = x` exactly. The script
1. fits the network by a few Adam steps to the kinematics of a `PlanarConstantCurvature`
   segment (positions of the quadrature nodes over sampled bending angles),
2. puts the learned body behind a rigid link on a revolute joint and prints its inverse
   dynamics and mass matrix next to those of the constant-curvature robot,
3. differentiates a loss on the inverse dynamics with respect to the network's weights
   (`jax.grad` through the recursion) and checks the gradient against a central difference.
It writes `fit.png` (fit loss and the learned vs. exact backbones) to the output folder
(default `out/learned_kinematics`) and prints where it is.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import NamedTuple

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import softrigid as sr  # noqa: E402
from softrigid import joints, kinematics, quadrature  # noqa: E402

LENGTH, RADIUS, DENSITY = 0.3, 0.03, 1000.0


def init_mlp(key: jax.Array, hidden: int = 16) -> dict[str, jax.Array]:
    """Weights of `d(x, q) = L · W2 tanh(W1 (x/L, q) + b1)` (4 inputs, 3 outputs), small
    random initial values."""
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (hidden, 4)) / 2.0,
        "b1": jnp.zeros(hidden),
        "w2": jax.random.normal(k2, (3, hidden)) * 0.01,
    }


def mlp_map(x: jax.Array, q: jax.Array, params: dict[str, jax.Array]) -> jax.Array:
    """`f(x, q) = x + d(x, q) − d(x, 0)`: material point `x` `(3,)` at the coordinate `q` `(1,)`
    (`f(x, 0) = x` for any weights)."""

    def d(qq: jax.Array) -> jax.Array:
        h = jnp.tanh(params["w1"] @ jnp.concatenate([x / LENGTH, qq]) + params["b1"])
        return LENGTH * (params["w2"] @ h)

    return x + d(q) - d(jnp.zeros_like(q))


def volume(n_axial: int = 3) -> quadrature.QuadratureRule:
    return quadrature.cylinder(RADIUS, LENGTH, n_axial=n_axial, n_radial=1, n_angular=3)


def learned_body(params: dict[str, jax.Array], n_axial: int = 3) -> sr.SoftBody:
    """The learned segment as a `SoftBody` (one coordinate, the weights as traced params)."""
    return sr.SoftBody(mlp_map, volume(n_axial), DENSITY, n_q=1, params=params)


def teacher_body(n_axial: int = 3) -> sr.SoftBody:
    return sr.SoftBody(kinematics.PlanarConstantCurvature(LENGTH), volume(n_axial), DENSITY)


def robot_with(body: sr.SoftBody) -> sr.Robot:
    """A 0.2 m, 0.5 kg rigid link on a revolute joint about y, then the soft segment."""
    rigid = sr.RigidBody(
        mass=0.5,
        com=(0.0, 0.0, 0.1),
        inertia=jnp.diag(jnp.array([1.7e-3, 1.7e-3, 1e-4])),
        distal=(jnp.eye(3), jnp.array([0.0, 0.0, 0.2])),
    )
    return sr.Robot(
        [
            sr.Link(joints.Revolute((0.0, 1.0, 0.0)), rigid),
            sr.Link(joints.Fixed(), body),
        ]
    )


class Fit(NamedTuple):
    params: dict[str, jax.Array]
    losses: np.ndarray


def fit_to_constant_curvature(
    params: dict[str, jax.Array], steps: int = 200, n_axial: int = 3, lr: float = 0.02
) -> Fit:
    """Adam on the mean squared node-position error (relative to `L²`) against the planar
    constant-curvature map over bending angles in `[−1, 1]`."""
    points = volume(n_axial).points
    teacher = kinematics.PlanarConstantCurvature(LENGTH)
    qs = jnp.linspace(-1.0, 1.0, 9)[:, None]
    target = jax.vmap(lambda q: jax.vmap(teacher, in_axes=(0, None))(points, q))(qs)

    def loss(p: dict[str, jax.Array]) -> jax.Array:
        mapped = jax.vmap(lambda q: jax.vmap(mlp_map, in_axes=(0, None, None))(points, q, p))(qs)
        return jnp.mean((mapped - target) ** 2) / LENGTH**2

    @jax.jit
    def step(p, m, v, k):
        value, g = jax.value_and_grad(loss)(p)
        m = jax.tree.map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree.map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        scale = jnp.sqrt(1 - 0.999**k) / (1 - 0.9**k)
        p = jax.tree.map(lambda a, b, c: a - lr * scale * b / (jnp.sqrt(c) + 1e-12), p, m, v)
        return p, m, v, value

    m = jax.tree.map(jnp.zeros_like, params)
    v = jax.tree.map(jnp.zeros_like, params)
    losses = []
    for k in range(1, steps + 1):
        params, m, v, value = step(params, m, v, k)
        losses.append(float(value))
    return Fit(params, np.asarray(losses))


def dynamics_loss(
    params: dict[str, jax.Array], states: tuple[jax.Array, ...], target: jax.Array, n_axial: int
) -> jax.Array:
    """`Σ |ID(q, q̇, q̈) − target|²` over the states, for the robot with the learned body built
    from `params` (differentiable in the weights)."""
    robot = robot_with(learned_body(params, n_axial))
    nu = jax.vmap(lambda q, qd, qdd: sr.inverse_dynamics(robot, q, qd, qdd))(*states)
    return jnp.sum((nu - target) ** 2)


def random_states(count: int, seed: int = 0) -> tuple[jax.Array, ...]:
    rng = np.random.default_rng(seed)
    return tuple(jnp.asarray(rng.uniform(-1.0, 1.0, (count, 2))) for _ in range(3))


def gradient_check(
    params: dict[str, jax.Array], n_axial: int = 3, count: int = 4, eps: float = 1e-6
) -> tuple[float, float, float]:
    """`(‖∇_θ loss‖, ∇_θ loss · v, central difference along v)` for a random unit direction
    `v` in weight space; the loss compares the learned robot's ID with the constant-curvature
    robot's on `count` random states."""
    states = random_states(count)
    teacher = robot_with(teacher_body(n_axial))
    target = jax.vmap(lambda q, qd, qdd: sr.inverse_dynamics(teacher, q, qd, qdd))(*states)
    loss = jax.jit(lambda p: dynamics_loss(p, states, target, n_axial))
    grad = jax.jit(jax.grad(lambda p: dynamics_loss(p, states, target, n_axial)))(params)
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.PRNGKey(1), len(leaves))
    direction = [jax.random.normal(k, leaf.shape) for k, leaf in zip(keys, leaves)]
    norm = jnp.sqrt(sum(jnp.sum(d * d) for d in direction))
    direction = jax.tree.unflatten(tree, [d / norm for d in direction])
    along = sum(jnp.sum(g * d) for g, d in zip(jax.tree.leaves(grad), jax.tree.leaves(direction)))

    def shifted(s: float) -> dict[str, jax.Array]:
        return jax.tree.map(lambda p, d: p + s * d, params, direction)

    fd = (loss(shifted(eps)) - loss(shifted(-eps))) / (2 * eps)
    grad_norm = jnp.sqrt(sum(jnp.sum(g * g) for g in jax.tree.leaves(grad)))
    return float(grad_norm), float(along), float(fd)


def plot_fit(fit: Fit, path: Path, n_axial: int = 3) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    teacher = kinematics.PlanarConstantCurvature(LENGTH)
    axis = jnp.stack([jnp.zeros(20), jnp.zeros(20), jnp.linspace(0, LENGTH, 20)], -1)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 4))
    ax1.semilogy(fit.losses)
    ax1.set_xlabel("Adam step")
    ax1.set_ylabel("mean squared position error / L²")
    for q in (-1.0, -0.5, 0.5, 1.0):
        qq = jnp.array([q])
        exact = jax.vmap(teacher, in_axes=(0, None))(axis, qq)
        learned = jax.vmap(mlp_map, in_axes=(0, None, None))(axis, qq, fit.params)
        (line,) = ax2.plot(exact[:, 0], exact[:, 2], label=f"q = {q}")
        ax2.plot(learned[:, 0], learned[:, 2], "--", color=line.get_color())
    ax2.set_aspect("equal")
    ax2.set_xlabel("x1 [m]")
    ax2.set_ylabel("x3 [m]")
    ax2.set_title("backbone: constant curvature (solid),\nMLP (dashed)", fontsize=10)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(out: Path, steps: int = 150) -> None:
    start = time.perf_counter()
    fit = fit_to_constant_curvature(init_mlp(jax.random.PRNGKey(0)), steps=steps)
    print(f"fit to constant curvature: loss {fit.losses[0]:.3e} -> {fit.losses[-1]:.3e}")

    learned, teacher = robot_with(learned_body(fit.params)), robot_with(teacher_body())
    q, qd, qdd = jnp.array([0.3, 0.8]), jnp.array([1.0, -2.0]), jnp.array([0.5, 3.0])
    for name, robot in (("learned", learned), ("constant curvature", teacher)):
        nu, mass = sr.mass_inverse_dynamics(robot, q, qd, qdd)
        print(f"{name:>18}: ID = {np.asarray(nu)}, M = {np.asarray(mass).tolist()}")

    grad_norm, along, fd = gradient_check(fit.params)
    print(
        f"d(ID loss)/d(weights): |grad| = {grad_norm:.4e}; along a random direction "
        f"grad·v = {along:.10e}, central difference = {fd:.10e} "
        f"(relative difference {abs(along - fd) / abs(fd):.1e})"
    )
    out.mkdir(parents=True, exist_ok=True)
    plot_fit(fit, out / "fit.png")
    print(f"figure written to {out.resolve()} ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    from _cli import folder_main  # beside this script

    sr.fast_compilation()  # XLA:CPU compiles 2-2.7x faster (README, "Fast start")
    sr.enable_compilation_cache()  # a later run loads the compiled programs (README, "Fast start")
    folder_main(main, __doc__.splitlines()[0], "out/learned_kinematics")
