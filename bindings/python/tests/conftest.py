# SPDX-License-Identifier: MIT OR Apache-2.0
"""Fixtures of the rlx_attn_mask suite.

`target`: runs a test once per entry of supported_targets(), forced with
force_target and checked with dispatched_target. `flavor`: the score
containers (NumPy float32/float16, torch float32/float16/bfloat16). A test
that needs torch fails instead of skipping when torch is missing and
CI=true or RLX_PYTHON_REQUIRE_TORCH is set (ctest sets it).

RLX_PYTHON_EXPECT_PACKAGE_DIR (pip_acceptance.py sets it): the directory
rlx_attn_mask must be imported from, so that the suite cannot pass against
the source or build tree's package instead of the installed one.
"""

import os

import numpy as np
import pytest

import rlx_attn_mask as rlx
from reference import FLAVORS

_expected = os.environ.get("RLX_PYTHON_EXPECT_PACKAGE_DIR")
if _expected and os.path.realpath(os.path.dirname(rlx.__file__)) != \
        os.path.realpath(_expected):
    raise RuntimeError(f"rlx_attn_mask was imported from {rlx.__file__}, "
                       f"not from {_expected}")

try:
    import torch
except ImportError:  # pragma: no cover - the failure below says it
    torch = None


def require_torch():
    if torch is not None:
        return torch
    if os.environ.get("CI") == "true" or os.environ.get(
            "RLX_PYTHON_REQUIRE_TORCH"):
        pytest.fail("torch is not importable (Debian: python3-torch), and "
                    "CI / RLX_PYTHON_REQUIRE_TORCH forbid skipping")
    pytest.skip("torch is not installed")


@pytest.fixture(params=rlx.supported_targets())
def target(request):
    rlx.force_target(request.param)
    assert rlx.active_target() == request.param
    assert rlx.dispatched_target() == request.param
    yield request.param
    rlx.force_target("")


@pytest.fixture(params=FLAVORS)
def flavor(request):
    if request.param.startswith("torch"):
        require_torch()
    return request.param


@pytest.fixture
def rng(request):
    # A fixed stream per test: reproducible, different between tests.
    seed = sum(ord(c) for c in request.node.nodeid) % (2**32)
    return np.random.default_rng(seed)
