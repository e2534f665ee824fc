"""softrigid: exact, fast, differentiable dynamics of serial robots of rigid and soft bodies.

A robot is an immutable chain of `Link(joint, body)`; bodies are `RigidBody` (inertial
parameters) or `SoftBody` (any map `f(x, q)` over a quadrature volume). The recursion of
Pustina, Della Santina and De Luca (model-agnostic Kane equations) gives the inverse dynamics and
the mass matrix in one pass linear in the number of bodies.
"""

from . import actuators, io, joints, kinematics, lagrangian, materials, meshing, quadrature
from ._bodies import Material, RigidBody, SoftBody
from ._dynamics import (
    dalembert_wrenches,
    damping_force,
    dissipation,
    elastic_energy,
    elastic_force,
    forward_dynamics,
    forward_kinematics,
    gravity_force,
    inertial_inverse_dynamics,
    internal_force,
    inverse_dynamics,
    kinetic_energy,
    mass_inertial_inverse_dynamics,
    mass_inverse_dynamics,
    mass_matrix,
    material_points,
    potential_energy,
    world_points,
)
from ._loads import PointLoad, Wrench
from ._model import Link, Robot
from ._simulate import Trajectory, simulate
from .actuators import actuation_force, actuation_matrix, controller
from .materials import stiffness_matrix
from .statics import InverseStaticSolution, StaticSolution, equilibrium, inverse_statics

__all__ = [
    "InverseStaticSolution",
    "Link",
    "Material",
    "PointLoad",
    "RigidBody",
    "Robot",
    "SoftBody",
    "StaticSolution",
    "Trajectory",
    "Wrench",
    "actuation_force",
    "actuation_matrix",
    "actuators",
    "controller",
    "dalembert_wrenches",
    "damping_force",
    "dissipation",
    "elastic_energy",
    "elastic_force",
    "equilibrium",
    "forward_dynamics",
    "forward_kinematics",
    "gravity_force",
    "inertial_inverse_dynamics",
    "internal_force",
    "inverse_dynamics",
    "inverse_statics",
    "io",
    "joints",
    "kinematics",
    "kinetic_energy",
    "lagrangian",
    "mass_inertial_inverse_dynamics",
    "mass_inverse_dynamics",
    "mass_matrix",
    "material_points",
    "materials",
    "meshing",
    "potential_energy",
    "quadrature",
    "simulate",
    "stiffness_matrix",
    "world_points",
]
