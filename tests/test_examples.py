"""The examples' computations at small sizes, checked against physics (imported from
`examples/` by path; the figures go to `tmp_path`)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from scripts import load_example

import softrigid as sr


@pytest.fixture(scope="module")
def tendon_arm():
    """The tendon-driven arm with two segments, its sweep (gravity alone, the upper tendon
    pulled harder, then the lower one added) and an inverse-statics solution."""
    ex = load_example("tendon_arm_equilibrium")
    arm = ex.build_arm(n_segments=2, n_axial=2)
    states = ex.sweep(arm, [(0.0, 0.0), (0.0, 10.0), (0.0, 20.0), (10.0, 20.0)])
    # a target the arm reaches with known inputs; the inverse statics starts from 25 N each
    held = sr.equilibrium(arm.robot, jnp.array([-1.0, 30.0, 20.0]))
    target = np.asarray(ex.tip_position(arm, held.q))
    inverse = ex.reach(arm, target)
    return ex, arm, states, target, inverse


def test_tendon_arm_equilibria_balance(tendon_arm):
    # every returned state satisfies ID(q, 0, 0) = A(q) u (the recursion, not the solver's
    # energy gradient), converged quadratically in a few Newton steps, and is stable
    _, arm, states, _, _ = tendon_arm
    zero = jnp.zeros(arm.robot.n_q)
    for s in states:
        # relative to the gravity torques in play
        scale = float(jnp.max(jnp.abs(sr.gravity_force(arm.robot, jnp.asarray(s.q)))))
        q = jnp.asarray(s.q)
        residual = sr.inverse_dynamics(arm.robot, q, zero, zero) - sr.actuation_force(
            arm.robot, q, jnp.asarray(s.u)
        )
        np.testing.assert_allclose(residual, 0.0, atol=1e-10 * scale)
        assert 1 <= s.iterations <= 5
        assert s.stable


def test_tendon_arm_bends_toward_the_pulled_tendon(tendon_arm):
    # gravity alone bends the horizontal arm down; pulling the upper tendon (body x1 = −d, the
    # world's +z side) bends the segments it crosses up, the lower one bends them down
    _, _, states, _, _ = tendon_arm
    tip_z = [s.tip[2] for s in states]
    assert tip_z[0] < 0.0
    assert tip_z[0] < tip_z[1] < tip_z[2]
    assert tip_z[3] < tip_z[2]
    # planar CC coordinate of the first segment (index 1 after the shoulder): A = −d, so the
    # upper tendon (d < 0) raises q (toward −x1, up) and the lower one (d > 0) lowers it
    bends = [s.q[1] for s in states]
    assert bends[0] < 0.0
    assert bends[0] < bends[1] < bends[2]
    assert bends[3] < bends[2]
    # the shoulder spring carries the arm's weight: the same sag angle without tendon
    # moments on the joint
    assert all(s.q[0] > 0.0 for s in states)


def test_tendon_arm_inverse_statics_reaches_the_target(tendon_arm):
    _, arm, _, target, inverse = tendon_arm
    np.testing.assert_allclose(inverse.output, target[[0, 2]], atol=1e-12)
    assert inverse.output_error < 1e-12
    assert inverse.converged
    # both tendons pull (minimum-norm steps from the 25 N pretension)
    assert float(inverse.u[1]) > 0.0 and float(inverse.u[2]) > 0.0
    # (q, u) is an equilibrium: solving the statics under u returns q
    check = sr.equilibrium(arm.robot, inverse.u, q0=inverse.q)
    np.testing.assert_allclose(check.q, inverse.q, atol=1e-10)


def test_tendon_arm_plot(tendon_arm, tmp_path):
    ex, arm, states, target, inverse = tendon_arm
    path = ex.plot(arm, states, inverse, target, tmp_path / "equilibria.png")
    assert path.exists()
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_scripts_with_an_output_folder_refuse_options(tmp_path):
    """`python examples/<script>.py [output-folder]`: an option is an error (exit status 2),
    not a folder created in the working directory (one subprocess runs the four parsers)."""
    import subprocess
    import sys
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples"
    scripts = ["swinging_arm", "export_paraview", "learned_kinematics", "tendon_arm_equilibrium"]
    program = (
        "import runpy, sys\n"
        f"sys.path.insert(0, {str(examples)!r})\n"  # as `python examples/<script>.py` does
        f"for name in {scripts!r}:\n"
        "    sys.argv = [name, '--t-final', '1']\n"
        "    try:\n"
        f"        runpy.run_path({str(examples)!r} + '/' + name + '.py', run_name='__main__')\n"
        "    except SystemExit as exit:\n"
        "        print(name, exit.code)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert out.stdout.split() == [word for name in scripts for word in (name, "2")], out.stderr
    assert out.stderr.count("unrecognized arguments: --t-final") == 4
    assert not any(tmp_path.iterdir())


def test_example_arguments_are_checked_before_the_run(tmp_path):
    """`examples/_cli.py`: times, counts and output folders refused as usage errors (a negative
    `--t-final` ran the statics only, an `--out` naming a file failed after the simulation)."""
    import argparse

    cli = load_example("_cli")
    for parse, text, message in [
        (cli.positive_float, "-1", "must be positive"),
        (cli.positive_float, "nan", "must be finite"),
        (cli.nonnegative_float, "-0.5", "must be zero or positive"),
        (cli.positive_int, "0", "must be at least 1"),
        (cli.positive_int, "2.5", "expected an integer"),
        (cli.output_folder, str(tmp_path / "file" / "sub"), "exists and is not a folder"),
    ]:
        (tmp_path / "file").write_text("")
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            parse(text)
    assert cli.nonnegative_float("0") == 0.0 and cli.positive_int("3") == 3
    # a folder that can be created is accepted and not left behind (the script creates it)
    assert cli.output_folder(str(tmp_path / "a" / "b")) == tmp_path / "a" / "b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.slow
def test_lqr_balances_the_inverted_soft_arm(tmp_path):
    """`examples/lqr_upright_arm.py` on a short run: the upright is an unstable equilibrium
    (statics and linearization agree), the LQR on `sr.linearize` holds it with both tendons
    pulling, the same start without feedback falls away. Slow (40 s of compilation in the
    tests' run): its LQR on `linearize` and `StateFeedback` runs in the fast set on a double
    pendulum (`test_linearize.py`)."""
    ex = load_example("lqr_upright_arm")
    summary = ex.main(1.2, tmp_path)
    assert summary["equilibrium_stable"] is False
    assert summary["open_loop_max_real_eigenvalue"] > 1.0
    assert summary["closed_loop_max_real_eigenvalue"] < 0.0
    assert summary["lqr_final_error_rad"] < 0.1 * summary["start_error_rad"]
    assert summary["open_loop_final_error_rad"] > summary["start_error_rad"]
    assert summary["lqr_min_tension_N"] > 0.0
    written = {"coordinates.png", "inputs.png", "snapshots.png", "summary.json"}
    assert written <= {p.name for p in tmp_path.iterdir()}
