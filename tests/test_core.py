"""Tests of refimpl/core.py, refimpl/jaxpr.py and the tracing interpreter."""

import threading
import warnings

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import core, errors, lax
from refimpl.interpreters.eval import eval_closed_jaxpr
from refimpl.jaxpr import dce_jaxpr


# --- abstract values ------------------------------------------------------

def test_shaped_array_forms():
  a = core.ShapedArray((3, 4), np.float32)
  assert a.str_short() == "float32[3,4]"
  assert a.str_short(short_dtypes=True) == "f32[3,4]"
  weak = core.ShapedArray((), np.int32, weak_type=True)
  assert str(weak) == "~int32[]"
  assert repr(weak) == "ShapedArray(int32[], weak_type=True)"
  assert (a == core.ShapedArray([3, 4], "float32")
          and hash(a) == hash(core.ShapedArray((3, 4), np.float32)))
  assert a != a.update(weak_type=True)
  assert a.ndim == 2 and a.size == 12


@pytest.mark.parametrize("value, dtype, weak", [
    (1, np.int32, True), (1.5, np.float32, True), (True, np.bool_, False),
    (1j, np.complex64, True), (np.float64(2.0), np.float32, False),
    (np.arange(3, dtype=np.int64), np.int32, False),
])
def test_get_aval_of_python_and_numpy_values(value, dtype, weak):
  aval = core.get_aval(value)
  assert aval.dtype == dtype and aval.weak_type == weak


def test_get_aval_rejects_non_arrays():
  with pytest.raises(TypeError, match="not a valid JAX type"):
    core.get_aval("a string")
  with pytest.raises(TypeError, match="not a valid JAX array type"):
    core.get_aval(np.array(["a"]))


def test_shape_from_traced_value_is_a_type_error():
  with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values"):
    jax.jit(lambda n: jnp.zeros((n,)))(3)


# --- tracer errors --------------------------------------------------------

@pytest.mark.parametrize("convert, error", [
    (bool, errors.TracerBoolConversionError),
    (int, errors.ConcretizationTypeError),
    (float, errors.ConcretizationTypeError),
    (np.asarray, errors.TracerArrayConversionError),
])
def test_tracer_concretization_errors(convert, error):
  with pytest.raises(error):
    jax.jit(lambda x: convert(x))(1.0)


def test_tracer_index_conversion():
  """`operator.index` of a tracer: integer scalars only (a float one is a
  TypeError even when its value is known, as in JAX), and a traced integer
  has no value to give."""
  with pytest.raises(errors.TracerIntegerConversionError):
    jax.jit(lambda x: range(x))(1)
  with pytest.raises(TypeError, match="Only integer scalar arrays can be converted"):
    jax.jit(lambda x: range(x))(1.0)
  # under jvp the primal is known, but a float exponent is still not an index:
  # 2.0 ** s is exp(s log 2), not a constant integer power
  primal, tangent = jax.jvp(lambda s: 2.0 ** s, (2.5,), (1.0,))
  np.testing.assert_allclose(primal, 2.0 ** 2.5, rtol=1e-6)
  np.testing.assert_allclose(tangent, 2.0 ** 2.5 * np.log(2.0), rtol=1e-6)


def test_concretization_errors_are_type_errors():
  for cls in (errors.TracerBoolConversionError, errors.ConcretizationTypeError,
              errors.TracerIntegerConversionError, errors.TracerArrayConversionError):
    assert issubclass(cls, TypeError)
  assert issubclass(errors.NonConcreteBooleanIndexError, errors.JAXIndexError)
  assert issubclass(errors.NonConcreteBooleanIndexError, IndexError)
  assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)


def test_bool_error_message_suggests_fixes():
  with pytest.raises(errors.TracerBoolConversionError) as info:
    jax.jit(lambda x: 1 if x < 3 else 2)(1.0)
  message = str(info.value)
  for fix in ("static_argnums", "jnp.where", "lax.cond"):
    assert fix in message


def test_leaked_tracer_is_reported():
  leaked = []

  @jax.jit
  def f(x):
    leaked.append(x)
    return x

  f(1.0)
  with pytest.raises(errors.UnexpectedTracerError):
    jnp.add(leaked[0], 1.0)


# --- the jaxpr text format --------------------------------------------------

def test_jaxpr_text_one_line():
  text = str(jax.make_jaxpr(lambda x: jnp.sin(x))(np.zeros(3, np.float32)))
  assert text == "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }"


def test_jaxpr_text_literals_and_weak_scalars():
  assert str(jax.make_jaxpr(lambda x: x + 2.0)(np.zeros(3, np.float32))) == \
      "{ lambda ; a:f32[3]. let b:f32[3] = add a 2.0:f32[] in (b,) }"
  assert str(jax.make_jaxpr(lambda x: x * 2)(1.0)) == \
      "{ lambda ; a:f32[]. let b:f32[] = mul a 2.0:f32[] in (b,) }"


def test_jaxpr_text_multi_line_and_params():
  text = str(jax.make_jaxpr(lambda x: jnp.sum(jnp.exp(-x)))(np.zeros(3, np.float32)))
  assert text == ("{ lambda ; a:f32[3]. let\n"
                  "    b:f32[3] = neg a\n"
                  "    c:f32[3] = exp b\n"
                  "    d:f32[] = reduce_sum[axes=(0,)] c\n"
                  "  in (d,) }")


def test_jaxpr_text_consts_and_literal_outputs():
  c = jnp.arange(3.0)
  closed = jax.make_jaxpr(lambda x: (x + c, 1.0))(np.zeros(3, np.float32))
  assert str(closed) == \
      "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add b a in (c, 1.0:f32[]) }"
  assert len(closed.consts) == 1 and np.array_equal(closed.consts[0], c)


def test_jaxpr_text_nested_jit():
  inner = jax.jit(lambda x: jnp.sin(x))
  text = str(jax.make_jaxpr(lambda x: inner(x) * 2.0)(np.float32(1)))
  assert text == ("{ lambda ; a:f32[]. let\n"
                  "    b:f32[] = jit[\n"
                  "      name=<lambda>\n"
                  "      jaxpr={ lambda ; c:f32[]. let d:f32[] = sin c in (d,) }\n"
                  "    ] a\n"
                  "    e:f32[] = mul b 2.0:f32[]\n"
                  "  in (e,) }")


def test_variable_names_continue_after_z():
  def f(x):
    for _ in range(30):
      x = jnp.sin(x)
    return x
  text = str(jax.make_jaxpr(f)(1.0))
  assert "ba:f32[] = sin z" in text and text.endswith("in (be,) }")


def test_side_effect_equation_prints_without_outputs():
  def f(x):
    jax.debug.print("{}", x)
    return x
  assert str(jax.make_jaxpr(f)(np.zeros(2, np.float32))) == \
      "{ lambda ; a:f32[2]. let debug_callback[callback=<lambda>] a in (a,) }"


# --- IR utilities -------------------------------------------------------------

def test_dce_removes_dead_equations_and_keeps_effects():
  def f(x):
    jnp.sin(x)  # dead
    jax.debug.print("{}", x)
    return jnp.exp(x)
  closed = jax.make_jaxpr(f)(1.0)
  assert [e.primitive.name for e in closed.eqns] == ["sin", "debug_callback", "exp"]
  assert [e.primitive.name for e in dce_jaxpr(closed.jaxpr).eqns] == ["debug_callback", "exp"]


def test_structural_key_identifies_equal_programs():
  f = lambda x: jnp.sin(x) * 2.0
  a = jax.make_jaxpr(f)(np.zeros(3, np.float32))
  b = jax.make_jaxpr(f)(np.ones(3, np.float32))
  c = jax.make_jaxpr(lambda x: jnp.sin(x) * 3.0)(np.zeros(3, np.float32))
  assert a == b and hash(a) == hash(b)
  assert a != c


def test_eval_jaxpr_reproduces_the_function():
  f = lambda x, y: jnp.sum(jnp.exp(-x) * y)
  x, y = np.arange(4.0, dtype=np.float32), np.float32(3)
  closed = jax.make_jaxpr(f)(x, y)
  out, = eval_closed_jaxpr(closed, x, y)
  np.testing.assert_allclose(out, f(x, y), rtol=1e-6)
  # Evaluating the jaxpr under tracing re-traces to the same program.
  again = jax.make_jaxpr(lambda a, b: eval_closed_jaxpr(closed, a, b)[0])(x, y)
  assert str(again) == str(closed)


def test_eval_trace_checks_rules_against_shape_rule():
  bad_p = core.Primitive("bad")
  bad_p.def_impl(lambda x: x.astype(np.float64))
  bad_p.def_abstract_eval(lambda x: x)
  with pytest.raises(AssertionError, match="reference rule of bad"):
    bad_p.bind(np.float32(1))


def test_lax_is_strict_about_dtypes():
  with pytest.raises(TypeError, match="requires arguments to have the same dtypes"):
    lax.add(np.int32(1), np.float32(1))


@pytest.mark.parametrize("run", [lambda x: lax.reshape(x, x.shape),
                                 lambda x: jax.jit(lambda y: y)(x),
                                 lambda x: jnp.reshape(x, (2, 2))[0]],
                         ids=["eager no-op", "jit identity", "view"])
def test_results_never_alias_a_users_numpy_array(run):
  x = np.arange(4, dtype=np.float32)
  out = run(x)
  x[:] = -1  # the user's array stays theirs (writeable), the result unchanged
  assert x.flags.writeable
  assert (np.asarray(out) >= 0).all()


def test_a_rule_whose_result_is_new_gives_an_array_owning_it():
  x = jnp.arange(4.0)
  out = x + 1
  assert not np.asarray(out).flags.writeable
  with pytest.raises(ValueError):
    np.asarray(out)[0] = 5


def test_shape_rule_errors_are_raised_every_time():
  for _ in range(2):
    with pytest.raises(TypeError, match="requires arguments to have the same dtypes"):
      lax.add(np.int32(1), np.float32(1))


def test_remembered_shape_rules_tell_param_types_apart():
  x = jnp.arange(3.0)
  assert lax.integer_pow(x, 2).dtype == np.float32
  with pytest.raises(TypeError):
    lax.integer_pow(x, 2.0)


# --- NumPy's floating-point error handling around reference rules ---------------

def _log_ratio(x):
  return jnp.log(x) / 0.0  # -inf, NaN and division by zero


@pytest.mark.parametrize("setting", ["raise", "warn", "ignore"])
def test_eager_rules_ignore_numpy_fp_errors_and_leave_the_users_setting(setting):
  x = jnp.array([1.0, 0.0, -1.0])
  with np.errstate(all=setting):
    before = np.geterr()
    with warnings.catch_warnings():
      warnings.simplefilter("error")
      out = _log_ratio(x)
    assert np.geterr() == before
  with np.errstate(all="ignore"):
    expected = np.log(np.array([1.0, 0.0, -1.0], np.float32)) / np.float32(0.0)
  np.testing.assert_array_equal(np.asarray(out), expected)


def test_a_failing_rule_leaves_the_error_handling_as_it_was():
  def failing(x):
    np.log(x)  # invalid: FloatingPointError if the user's setting reached the rule
    raise ValueError("rule failed")

  failing_p = core.Primitive("failing")
  failing_p.def_impl(failing)
  failing_p.def_abstract_eval(lambda x: x)
  with np.errstate(all="raise"):
    with pytest.raises(ValueError, match="rule failed"):
      failing_p.bind(np.float32(-1.0))
    assert np.geterr()["invalid"] == "raise"
    with warnings.catch_warnings():
      warnings.simplefilter("error")
      assert np.isnan(jnp.log(jnp.float32(-1.0)))  # the next rule still ignores errors


def test_fp_error_handling_is_per_thread():
  """An eager operation in one thread neither sees nor changes the error
  handling another thread set."""
  results = {}

  def worker():
    with np.errstate(all="raise"):
      _log_ratio(jnp.array([0.0, -1.0]))
      results["worker"] = np.geterr()["divide"]

  with np.errstate(all="warn"):
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(30)
    results["main"] = np.geterr()["divide"]
  assert results == {"worker": "raise", "main": "warn"}
