"""The numba-cuda backend: its programs in numba's CUDA simulator against the
reference, and its kernels compiled to PTX for compute capability 9.0."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from numba_backend.lower import LoweringError

_UNARY = {"tanh": jnp.tanh, "exp": jnp.exp, "sin": jnp.sin, "log1p": lambda x: jnp.log1p(x * x),
          "neg": lambda x: -x, "abs": jnp.abs, "square": lambda x: x * x}
_BINARY = {"add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "max": jnp.maximum,
           "where": lambda x, y: jnp.where(x > y, x, y * 0.5), "fma": lambda x, y: x * y + 1.0}


@st.composite
def _programs(draw):
  """(a function of two arrays made of elementwise and shape ops, its two
  arguments): the second broadcasts against the first, or is its transpose."""
  shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
  dtype = draw(st.sampled_from([np.float32, np.float64]))
  kind = draw(st.sampled_from(["broadcast", "transposed", "same"]))
  if kind == "broadcast":
    other = tuple(n if draw(st.booleans()) else 1 for n in shape)[draw(st.integers(0, len(shape))):]
  else:
    other = shape[::-1] if kind == "transposed" else shape
  ops = draw(st.lists(st.tuples(st.sampled_from(sorted(_UNARY)), st.sampled_from(sorted(_BINARY))),
                      min_size=1, max_size=4))

  def fun(x, y):
    y = y.T if kind == "transposed" else y
    for unary, binary in ops:
      x = _BINARY[binary](_UNARY[unary](x), y)
    return x.reshape(-1)

  rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
  args = [rng.standard_normal(s).astype(dtype) for s in (shape, other)]
  return fun, args


@settings(max_examples=25, deadline=None)
@given(_programs())
def test_elementwise_programs_match_the_reference(program):
  fun, args = program
  got = jax.jit(fun, backend="numba-cuda")(*args)
  want = jax.jit(fun, backend="reference")(*args)
  assert got.dtype == want.dtype and got.shape == want.shape
  if got.dtype == np.float32:   # float64 values rounded: the reference's bits
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  else:   # libm's float64 functions, the reference's NumPy ones (SIMD on some CPUs)
    np.testing.assert_array_max_ulp(np.asarray(got), np.asarray(want), maxulp=2)


def test_rank0_values_and_literals():
  f = jax.jit(lambda x, s: jnp.exp(x * s + 2.0) - s, backend="numba-cuda")
  x = np.linspace(-2, 2, 7).astype(np.float32)
  np.testing.assert_array_equal(np.asarray(f(x, np.float32(3))),
                                np.asarray(jax.jit(f.__wrapped__)(x, np.float32(3))))


def test_a_primitive_not_lowered_yet_is_a_clear_error():
  with pytest.raises(LoweringError, match="numba-cuda backend has no lowering for primitive "
                                          "'reduce_sum' yet.*numba backend \\(CPU\\) lowers it"):
    jax.jit(jnp.sum, backend="numba-cuda")(np.ones(3, np.float32))


_PTX_CHECK = """
import json, numpy as np
import refimpl as jax, refimpl.numpy as jnp
from numba_backend.cuda import device
x = np.ones((3, 4), np.float32)
programs = {"arithmetic": lambda x, y: jnp.where(x > 0.5, x * 2 + y.T, -x) - y.T,
            "transcendental": lambda x, y: jnp.tanh(x) + jnp.exp(y).T}
found = {}
for name, f in programs.items():
  with device.compiling_to_ptx() as ptx:
    jax.jit(f, backend="numba-cuda")(x, x.T.copy())
  found[name] = [(kernel, text) for kernel, text in ptx]
print(json.dumps(found))
"""


def _instructions(ptx, suffix):
  """The PTX instructions of `ptx` (not its directives) that name the type `suffix`."""
  return [line for line in ptx.splitlines()
          if suffix in line and not line.lstrip().startswith((".", "//"))]


def test_every_kernel_compiles_to_ptx_for_compute_capability_9():
  env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
  done = subprocess.run([sys.executable, "-c", _PTX_CHECK], env=env, capture_output=True,
                        text=True, timeout=600)
  assert done.returncode == 0, done.stderr[-3000:]
  found = json.loads(done.stdout.splitlines()[-1])
  for name, kernels in found.items():
    assert kernels, name   # each program launched kernels, each compiled
    for kernel, ptx in kernels:
      assert ".target sm_90" in ptx and ".entry" in ptx, (name, kernel)
  # float32 arithmetic stays float32; float32 transcendentals are float64
  # functions rounded (the reference's bits), as are max and min (exactly)
  assert not any(_instructions(ptx, ".f64") for _, ptx in found["arithmetic"])
  assert any(_instructions(ptx, ".f64") for _, ptx in found["transcendental"])
