"""softrigid: exact, fast, differentiable dynamics of serial robots of rigid and soft bodies.

A robot is an immutable chain of `Link(joint, body)` with its actuators; bodies are `RigidBody`
(inertial parameters) or `SoftBody` (any map `f(x, q)` over a quadrature volume). The recursion
of Pustina, Della Santina and De Luca (model-agnostic Kane equations) gives the inverse dynamics
and the mass matrix in one pass linear in the number of bodies; `dynamics_terms` evaluates
everything a state needs once for forward dynamics, statics, integrators and controllers.
"""

from . import (
    actuators,
    constraints,
    control,
    integrators,
    io,
    joints,
    kinematics,
    lagrangian,
    materials,
    meshing,
    plotting,
    quadrature,
    statics,
    urdf,
)
from ._body import Body
from ._cache import (
    compiler_options,
    fast_compilation,
    fused_loops,
    jit,
    synchronous_dispatch,
)
from ._chain import forward_kinematics, material_points, world_points
from ._closed_loop import vector_field
from ._constraints import ConstrainedAccelerations, constrained_forward_dynamics
from ._derivatives import (
    InverseDynamicsDerivatives,
    Linearization,
    inverse_dynamics_derivatives,
    linearize,
)
from ._dynamics import (
    DynamicsTerms,
    actuation_force,
    actuation_matrix,
    dalembert_wrenches,
    dynamics_terms,
    forward_dynamics,
    gravity_force,
    inertial_inverse_dynamics,
    inverse_dynamics,
    mass_inertial_inverse_dynamics,
    mass_inverse_dynamics,
    mass_matrix,
)
from ._energy import (
    damping_force,
    dissipation,
    elastic_energy,
    elastic_force,
    internal_force,
    kinetic_energy,
    potential_energy,
    stiffness_matrix,
)
from ._loads import PointLoad, Wrench
from ._model import Link, Robot
from ._persistent_cache import enable_compilation_cache
from ._rigid_body import RigidBody
from ._simulate import Trajectory, simulate
from ._soft_body import SoftBody
from .materials import Material
from .statics import InverseStaticSolution, StaticSolution, equilibrium, inverse_statics

__all__ = [
    "Body",
    "ConstrainedAccelerations",
    "DynamicsTerms",
    "InverseDynamicsDerivatives",
    "InverseStaticSolution",
    "Linearization",
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
    "compiler_options",
    "constrained_forward_dynamics",
    "constraints",
    "control",
    "dalembert_wrenches",
    "damping_force",
    "dissipation",
    "dynamics_terms",
    "elastic_energy",
    "elastic_force",
    "enable_compilation_cache",
    "equilibrium",
    "fast_compilation",
    "forward_dynamics",
    "forward_kinematics",
    "fused_loops",
    "gravity_force",
    "inertial_inverse_dynamics",
    "integrators",
    "internal_force",
    "inverse_dynamics",
    "inverse_dynamics_derivatives",
    "inverse_statics",
    "io",
    "jit",
    "joints",
    "kinematics",
    "kinetic_energy",
    "lagrangian",
    "linearize",
    "mass_inertial_inverse_dynamics",
    "mass_inverse_dynamics",
    "mass_matrix",
    "material_points",
    "materials",
    "meshing",
    "plotting",
    "potential_energy",
    "quadrature",
    "simulate",
    "statics",
    "stiffness_matrix",
    "synchronous_dispatch",
    "urdf",
    "vector_field",
    "world_points",
]
