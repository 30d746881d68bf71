"""The contracts every piece of jaxbandit shares.

The paper's reward model eq:reward, r_t = ⟨X_t, θ*⟩ + η_t + c_t, is split along its terms:

- a :class:`Stream` is the exogenous part: θ*, and each round's contexts X_t `[K, d]`, their means
  ⟨x, θ*⟩ `[K]`, the noise η_t and the revealed ν_t — a function of (key, θ*, t) alone, never of what a
  learner did, so every algorithm and grid point of a seed can share one draw;
- an :class:`Adversary` adds c_t, with its own state (what it has spent), seeing the round, θ* and the
  learner's choice (Section 3.1: c_t may depend on 𝒳_t, X_t and r'_t);
- an :class:`Environment` is the pair; an :class:`Algorithm` sees only the contexts, its reward r_t and
  ν_t — never θ*, and an environment never sees an algorithm's state.

Everything is written for one run (no batch axis) and batched only with ``vmap`` (rlax, optax style).
Shapes and structure (dimensions, horizons, iteration counts) are static Python values; every numeric
hyperparameter may be a traced scalar (``jax.typing.ArrayLike``), so a grid of them is a ``vmap`` axis.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import jax

Array = jax.Array
PRNGKey = jax.Array
#: An algorithm's or adversary's state: a pytree (usually a ``NamedTuple``) of arrays.
State = Any


class SelectFn(Protocol):
    """``select(state, contexts) -> action``: ``contexts`` `[K, d]`; an int32 scalar in [0, K), ties to
    the lowest index."""

    def __call__(self, state: State, contexts: Array, /) -> Array: ...


class KeyedSelectFn(Protocol):
    """``select(state, contexts, key) -> action`` of a randomised algorithm; the key is consumed."""

    def __call__(self, state: State, contexts: Array, key: PRNGKey, /) -> Array: ...


class UpdateFn(Protocol):
    """``update(state, x, reward, nu) -> state``: ``x`` `[d]` the chosen context, ``reward`` r_t, ``nu``
    the ν_t the environment reveals (NaN where it reveals none)."""

    def __call__(self, state: State, x: Array, reward: Array, nu: Array, /) -> State: ...


class KeyedUpdateFn(Protocol):
    """``update(state, x, reward, nu, key) -> state`` of a randomised algorithm; the key is consumed."""

    def __call__(self, state: State, x: Array, reward: Array, nu: Array, key: PRNGKey, /) -> State: ...


class Algorithm(NamedTuple):
    """A bandit algorithm as pure functions (optax's ``GradientTransformation`` shape).

    - ``init() -> state``: the state before round 1; every leaf has its final dtype and shape.
    - ``select``: :class:`SelectFn`, or :class:`KeyedSelectFn` when ``randomized``.
    - ``update``: :class:`UpdateFn`, or :class:`KeyedUpdateFn` when ``randomized``.
    - ``uses_revealed_nu``: True when ``update`` needs a real ν_t (the known-ν_t setting), so a runner
      refuses an environment that reveals none.
    - ``randomized``: True when ``select`` and ``update`` take a per-round key as their last argument
      (Thompson sampling); the runner then passes fresh keys each round. Algorithms written against the
      first contract, ``Algorithm(init, select(state, contexts), update(state, x, reward, nu))``, are
      the default and keep working unchanged.
    - ``dim``, ``horizon``: the d and T it was built for (static; None: not declared), so that a runner
      refuses an environment of another dimension or a run longer than T (its constants and buffers are
      sized by T) before anything is traced.
    - ``policy``: what kind of choice ``select`` makes (one of :data:`POLICIES`): ``"argmax"`` (the
      default: every round's arm is an argmax of per-arm scores, ties going to the lowest index: UCB,
      Thompson sampling), or ``"mixed"`` (some rounds choose an arm without regard to the arms'
      contexts: ε-greedy's uniformly random arm, a round-robin warm start). ``jb.testing`` checks the tie
      rule in every round of an ``"argmax"`` policy and in the rounds of a ``"mixed"`` one whose choice
      follows the contexts.
    """

    init: Callable[[], State]
    select: Callable[..., Array]
    update: Callable[..., State]
    uses_revealed_nu: bool = False
    randomized: bool = False
    dim: int | None = None
    horizon: int | None = None
    policy: str = "argmax"


#: The kinds of policy an :class:`Algorithm` declares (``Algorithm.policy``).
POLICIES = ("argmax", "mixed")


def select_action(alg: Algorithm, state: State, contexts: Array, key: PRNGKey) -> Array:
    """``alg.select`` with the per-round ``key`` passed only to a randomised algorithm."""
    if alg.randomized:
        return alg.select(state, contexts, key)
    return alg.select(state, contexts)


def update_state(alg: Algorithm, state: State, x: Array, reward: Array, nu: Array, key: PRNGKey) -> State:
    """``alg.update`` with the per-round ``key`` passed only to a randomised algorithm."""
    if alg.randomized:
        return alg.update(state, x, reward, nu, key)
    return alg.update(state, x, reward, nu)


class Round(NamedTuple):
    """One round of a stream (before any corruption).

    ``contexts`` `[K, d]` the decision set X_t; ``means`` `[K]` = ⟨x, θ*⟩ of each arm; ``eta`` the noise
    η_t added to the chosen arm's mean; ``nu`` the revealed ν_t (NaN where the stream reveals none).
    """

    contexts: Array
    means: Array
    eta: Array
    nu: Array


class Stream(NamedTuple):
    """The exogenous part of an environment: θ*, contexts and noise (gymnax style, key first).

    - ``init(key) -> theta_star`` `[d]` (the key is consumed);
    - ``draw(key, theta_star, t) -> Round`` for the 0-based round index ``t``: a function of its
      arguments alone (common random numbers: every learner facing the same key sees the same round);
    - ``dim``, ``num_arms``: static shapes; ``horizon``: the longest run it holds (None: any);
      ``reveals_nu``: whether ``Round.nu`` carries a real ν_t.
    """

    init: Callable[[PRNGKey], Array]
    draw: Callable[[PRNGKey, Array, Array], Round]
    dim: int
    num_arms: int
    horizon: int | None = None
    reveals_nu: bool = True


class AdversaryView(NamedTuple):
    """What an adversary sees in round t: the decision set ``contexts`` `[K, d]`, ``theta_star`` `[d]`,
    the arms' ``means`` `[K]`, the learner's ``action``, the noise ``eta`` (so r'_t = means[action] + eta)
    and the 0-based round index ``t``."""

    contexts: Array
    theta_star: Array
    means: Array
    action: Array
    eta: Array
    t: Array


class Adversary(NamedTuple):
    """A corruption mechanism adding c_t to the reward (eq:reward).

    - ``init() -> state``: its state before round 1 (e.g. the corruption spent so far, a scalar);
    - ``corrupt(state, view) -> (c_t, state)``: ``view`` an :class:`AdversaryView`;
    - ``budget() -> bound``: the bound on Σ_t |c_t| the adversary guarantees (None: none declared),
      which ``jb.testing.check_environment`` verifies. A function, so that the tuple stays hashable
      (runners take environments as static arguments) while the bound may be a traced value.
    """

    name: str
    init: Callable[[], State]
    corrupt: Callable[[State, AdversaryView], tuple[Array, State]]
    budget: Callable[[], Array] | None = None


class EnvState(NamedTuple):
    """θ* `[d]` and the adversary's state."""

    theta_star: Array
    adversary: State


class Feedback(NamedTuple):
    """What one round produces. The algorithm sees only ``reward`` and ``nu``."""

    reward: Array  # r_t = <X_t, θ*> + η_t + c_t  (eq:reward)
    nu: Array  # ν_t revealed this round (NaN where the environment reveals none)
    regret: Array  # max_x <x, θ*> − <X_t, θ*>
    corruption: Array  # c_t


class Environment(NamedTuple):
    """A linear contextual bandit environment: an exogenous :class:`Stream` and an :class:`Adversary`."""

    stream: Stream
    adversary: Adversary

    @property
    def dim(self) -> int:
        return self.stream.dim

    @property
    def num_arms(self) -> int:
        return self.stream.num_arms

    @property
    def horizon(self) -> int | None:
        return self.stream.horizon

    @property
    def reveals_nu(self) -> bool:
        return self.stream.reveals_nu

    def init(self, key: PRNGKey) -> EnvState:
        """θ* from ``key`` (consumed) and the adversary's initial state."""
        return EnvState(self.stream.init(key), self.adversary.init())

    def respond(self, state: EnvState, rnd: Round, action: Array, t: Array) -> tuple[EnvState, Feedback]:
        """The adversary's c_t for the learner's ``action`` and the round's :class:`Feedback`."""
        view = AdversaryView(rnd.contexts, state.theta_star, rnd.means, action, rnd.eta, t)
        c, adversary_state = self.adversary.corrupt(state.adversary, view)
        chosen = rnd.means[action]
        feedback = Feedback(
            reward=chosen + rnd.eta + c, nu=rnd.nu, regret=rnd.means.max() - chosen, corruption=c
        )
        return state._replace(adversary=adversary_state), feedback


class Trajectory(NamedTuple):
    """Per-round record of one run, each `[T]` (leading batch axes under ``vmap``)."""

    regret: Array  # pseudo-regret max_x <x, θ*> − <X_t, θ*>
    action: Array  # index of the chosen arm
    corruption: Array  # c_t added by the adversary
    reward: Array  # observed reward r_t
