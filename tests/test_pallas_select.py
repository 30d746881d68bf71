"""``benchmarks/pallas_select.py`` (a GPU experiment: CR-Hvt-UCB's arm selection as one Pallas kernel
with the runs on the minor axes) checked on the CPU, so that a GPU lease only has to time it: in Pallas'
interpret mode it chooses the library's arms, and it lowers to a Triton kernel for CUDA."""

import importlib
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
pallas_select = importlib.import_module("pallas_select")


def test_interpret_mode_chooses_the_librarys_arms():
    major, minor = pallas_select.inputs(32, 16, seed=3)
    arms, best = pallas_select.pallas_select(*minor, block_streams=8, interpret=True)
    np.testing.assert_array_equal(np.asarray(arms), np.asarray(pallas_select.xla_select(*major)))
    # the same sums in the same order; XLA may contract a multiply-add into one rounding or not
    reference = np.asarray(pallas_select.xla_best_score(*major))
    assert np.all(np.abs(reference - np.asarray(best)) <= 4 * np.spacing(np.abs(reference)))


def test_the_kernel_lowers_to_triton_for_cuda():
    assert "xla.gpu.triton" in pallas_select.lowered_for_cuda(seeds=16, lanes=16, block_streams=8)
