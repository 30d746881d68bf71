"""What jb.testing catches that breaks science, and the correct extensions it must not reject (issue 55):
the noise families' properties (``check_noise``), the streams' and randomised algorithms' properties,
and the policy kinds the tie property applies to."""

import jax
import jax.numpy as jnp
import pytest

import jaxbandit as jb
from jaxbandit import testing

# --------------------------------------------------------------------------------------------------------
# Noise families: zero mean and the declared moments, statistical tests of a stated false-alarm rate


def _registered_families():
    for name, spec in jb.registry.noises().items():
        for eps in (0.25, 0.5, 1.0) if spec.heavy_tailed else (1.0,):
            yield f"{name}(eps={eps:g})", spec.build(eps)


LIBRARY_FAMILIES = {
    **dict(_registered_families()),
    "gaussian(2)": jb.noise.gaussian(2.0),
    "symmetric_pareto(1.5)": jb.noise.symmetric_pareto(1.5),
    "heteroscedastic(student_t(3))": jb.noise.heteroscedastic(jb.noise.student_t(3.0)),
    "pareto(1.5)": jb.noise.pareto(1.5),  # the paper's ε < 1 noise, centred
}


@pytest.mark.parametrize("name", list(LIBRARY_FAMILIES))
def test_every_library_noise_family_passes(name):
    family = LIBRARY_FAMILIES[name]
    eps = [e for e in testing._noise.EPS if 1 + e < float(family.max_order)] or [0.05]
    testing.check_noise(family, eps=eps)


def _shifted(family, by):
    return family._replace(sample=lambda k, t: (family.sample(k, t)[0] + by, family.sample(k, t)[1]))


GAUSSIAN = jb.noise.gaussian(1.0)
BROKEN_FAMILIES = {  # name: (family, the property that catches it, a part of the message)
    "mean +0.5": (_shifted(GAUSSIAN, 0.5), "zero_mean", "center the noise"),
    "student_t(3) with mean +0.5": (_shifted(jb.noise.student_t(3.0), 0.5), "zero_mean", "draws is 0.49"),
    "student_t(1.2) declared with max_order inf and a Gaussian's bound": (
        jb.noise.student_t(1.2)._replace(max_order=float("inf"), moment_bound=GAUSSIAN.moment_bound),
        "moment_bound",
        "is max_order = inf too large, or moment_bound too small?",
    ),
    "student_t(3) declared with a Gaussian's bound": (
        jb.noise.student_t(3.0)._replace(moment_bound=GAUSSIAN.moment_bound),
        "moment_bound",
        "contradicts the draws",
    ),
    "ignores its key": (
        GAUSSIAN._replace(sample=lambda k, t: GAUSSIAN.sample(jax.random.key(0), t)),
        "sample_uses_key",
        "sample must draw",
    ),
    "a draw of shape (1,)": (
        GAUSSIAN._replace(sample=lambda k, t: (jax.random.normal(k, (1,)), jnp.ones(()))),
        "sample_dtypes",
        "float32 scalar",
    ),
}


@pytest.mark.parametrize("name", list(BROKEN_FAMILIES))
def test_broken_noise_family_is_caught(name):
    family, prop, part = BROKEN_FAMILIES[name]
    with pytest.raises(AssertionError, match=rf"^check_noise\(.*\): property '{prop}' failed") as info:
        testing.check_noise(family)
    assert part in str(info.value)


def test_check_noise_is_deterministic_and_refuses_bad_arguments():
    family = BROKEN_FAMILIES["mean +0.5"][0]
    messages = set()
    for _ in range(2):
        with pytest.raises(AssertionError) as info:
            testing.check_noise(family)
        messages.add(str(info.value))
    assert len(messages) == 1  # seeded: the same draws, the same verdict
    with pytest.raises(ValueError, match=r"family=3 is invalid"):
        testing.check_noise(3)
    with pytest.raises(ValueError, match=r"eps=\(1.0,\) is invalid for student_t\(df=1.5\): every 1 \+ eps"):
        testing.check_noise(jb.noise.student_t(1.5), eps=(1.0,))
    with pytest.raises(ValueError, match=r"samples=100 is invalid"):
        testing.check_noise(GAUSSIAN, samples=100)
