"""Configuration and threads: context managers set an option for the current
thread only (nesting restores the outer value exactly), `config.update` sets
the global value that every thread without its own block sees.

Interleavings are forced with Barriers, Events and queues, so each test runs
one fixed schedule."""

import queue
import threading

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import core
from refimpl.config import config

TIMEOUT = 10  # seconds a thread waits for another before the test fails


def run_threads(*targets):
  """Runs each target in its own thread and re-raises the first exception
  one of them raised (a failing thread breaks `barrier`s it shares, so the
  others stop waiting)."""
  errors = []

  def wrap(target):
    def run():
      try:
        target()
      except BaseException as e:  # noqa: BLE001 (re-raised in the main thread)
        errors.append(e)
        for b in _barriers:
          b.abort()
    return run

  threads = [threading.Thread(target=wrap(t)) for t in targets]
  for t in threads:
    t.start()
  for t in threads:
    t.join(TIMEOUT * 3)
  assert not any(t.is_alive() for t in threads), "a thread hung"
  non_barrier = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
  if errors:
    raise (non_barrier or errors)[0]


_barriers = []


def barrier(parties):
  b = threading.Barrier(parties, timeout=TIMEOUT)
  _barriers.append(b)
  return b


@pytest.fixture(autouse=True)
def _fresh_barriers():
  yield
  _barriers.clear()


def test_enable_x64_in_one_thread_only():
  inside, b_done = threading.Event(), threading.Event()
  seen = {}

  def a():
    with jax.enable_x64():
      inside.set()
      assert b_done.wait(TIMEOUT)
      seen["a"] = jnp.arange(3).dtype, jnp.array(1.0).dtype

  def b():
    assert inside.wait(TIMEOUT)
    seen["b"] = jnp.arange(3).dtype, jnp.array(1.0).dtype
    b_done.set()

  run_threads(a, b)
  assert seen["a"] == (np.int64, np.float64)
  assert seen["b"] == (np.int32, np.float32)
  assert (jnp.arange(3).dtype, jnp.array(1.0).dtype) == (np.int32, np.float32)


def test_disable_jit_in_one_thread_only():
  traced_with = []  # per call of the Python function: (thread, its argument is a tracer)

  @jax.jit
  def f(x):
    traced_with.append((threading.current_thread().name, isinstance(x, core.Tracer)))
    return x + 1

  step = barrier(2)

  def a():
    with jax.disable_jit():
      step.wait()  # A is inside its block while B calls f
      step.wait()
      assert f(1) == 2
      step.wait()

  def b():
    step.wait()
    assert f(1) == 2
    step.wait()
    step.wait()  # A has run f op by op: B's call still hits its trace
    assert f(2) == 3

  run_threads(a, b)
  by_thread = {}
  for name, is_tracer in traced_with:
    by_thread.setdefault(name, []).append(is_tracer)
  assert sorted(by_thread.values()) == [[False], [True]]  # one trace by B, one eager run by A


def test_debug_nans_in_one_thread_only():
  step = barrier(2)
  seen = {}

  def a():
    with jax.debug_nans():
      step.wait()
      step.wait()
      with pytest.raises(FloatingPointError):
        jnp.log(-1.0)
      with pytest.raises(FloatingPointError):
        jax.jit(jnp.log)(-1.0)
      assert config.checking_floats
      with pytest.raises(FloatingPointError, match="in equation"):  # a compiled body
        jax.lax.scan(lambda c, x: (c, jnp.log(x)), 0., jnp.asarray([-1.0]))

  def b():
    step.wait()  # A is inside debug_nans
    assert not config.checking_floats
    seen["b"] = (jnp.log(-1.0), jax.jit(jnp.log)(-1.0),
                 jax.lax.scan(lambda c, x: (c, jnp.log(x)), 0., jnp.asarray([-1.0]))[1][0])
    step.wait()

  run_threads(a, b)
  assert all(np.isnan(v) for v in seen["b"])
  assert np.isnan(jnp.log(-1.0))


# (option, context manager, value different from the default)
MANAGERS = [
    ("jax_enable_x64", jax.enable_x64, True),
    ("jax_disable_jit", jax.disable_jit, True),
    ("jax_debug_nans", jax.debug_nans, True),
    ("jax_debug_infs", jax.debug_infs, True),
    ("jax_numpy_rank_promotion", jax.numpy_rank_promotion, "warn"),
    ("jax_threefry_partitionable", jax.threefry_partitionable, False),
    ("jax_default_prng_impl", jax.default_prng_impl, "rbg"),
    ("jax_enable_custom_prng", jax.enable_custom_prng, True),
    ("jax_legacy_prng_key", jax.legacy_prng_key, "warn"),
    ("jax_default_device", jax.default_device, "cpu:0"),
    ("jax_high_dynamic_range_gumbel",
     lambda v: config.option("jax_high_dynamic_range_gumbel", v), True),
]
NAMES = [name for name, _, _ in MANAGERS]


def current_values():
  return {name: getattr(config, name) for name in NAMES}


def global_values():
  return {name: config._values[name] for name in NAMES}


@jax.jit
def arange_plus(x):
  return jnp.arange(3) + x, jnp.ones(2) * x


def expected_dtypes(x64):
  return (np.dtype(np.int64), np.dtype(np.float64)) if x64 else (np.dtype(np.int32),
                                                                 np.dtype(np.float32))


def test_eight_threads_interleaved_blocks_leave_others_alone():
  main_before = current_values()
  n = 8
  step = barrier(n + 1)
  num_steps = 10

  def schedule(i):
    """Thread i's operation at each step: enter a block, exit the innermost
    one, or nothing. Blocks of two or three options nest, x64 among them in
    alternate threads (also turned off again inside its own block)."""
    picks = [MANAGERS[(i + k * 3) % len(MANAGERS)] for k in range(3)]
    if i % 2 == 0:
      picks = [MANAGERS[0], *picks[:1], (MANAGERS[0][0], MANAGERS[0][1], False)]
    ops = [None] * (i % 3)
    ops += [("enter", p) for p in picks]
    ops += [("exit", None)] * (i % 2 + 1) + [None] + [("exit", None)] * (len(picks) - i % 2 - 1)
    return (ops + [None] * num_steps)[:num_steps]

  def worker(i):
    def run():
      model = [dict(main_before)]  # values per nesting level, innermost last
      managers = []
      for op in schedule(i):
        if op is not None:
          kind, pick = op
          if kind == "enter":
            name, manager, value = pick
            cm = manager(value)
            cm.__enter__()
            managers.append(cm)
            model.append({**model[-1], name: value})
          else:
            managers.pop().__exit__(None, None, None)
            model.pop()
        step.wait()  # every thread has done its operation of this step
        assert current_values() == model[-1]
        outs = arange_plus(1)
        assert tuple(o.dtype for o in outs) == expected_dtypes(model[-1]["jax_enable_x64"])
        step.wait()
      assert not managers
    return run

  def main_thread_checks():
    for _ in range(num_steps):
      step.wait()
      assert current_values() == main_before
      assert tuple(o.dtype for o in arange_plus(1)) == expected_dtypes(False)
      step.wait()

  run_threads(*[worker(i) for i in range(n)], main_thread_checks)
  assert current_values() == main_before
  assert global_values() == main_before


@pytest.fixture
def restore_global_x64():
  before = config._values["jax_enable_x64"]
  yield
  config.update("jax_enable_x64", before)


def test_update_is_global_and_hidden_by_a_block(restore_global_x64):
  step = barrier(3)
  seen = {}

  def updater():
    step.wait()
    config.update("jax_enable_x64", True)
    step.wait()
    step.wait()

  def plain():
    seen["plain before"] = config.jax_enable_x64, jnp.arange(3).dtype
    step.wait()
    step.wait()
    seen["plain after"] = config.jax_enable_x64, jnp.arange(3).dtype
    step.wait()

  def in_block():
    with jax.enable_x64(False):
      step.wait()
      step.wait()
      seen["block after update"] = config.jax_enable_x64, jnp.arange(3).dtype
    seen["block exited"] = config.jax_enable_x64, jnp.arange(3).dtype
    step.wait()

  run_threads(updater, plain, in_block)
  assert seen == {"plain before": (False, np.int32), "plain after": (True, np.int64),
                  "block after update": (False, np.int32), "block exited": (True, np.int64)}
  assert config.jax_enable_x64 and jnp.arange(3).dtype == np.int64


def test_update_inside_own_block_takes_effect_on_exit(restore_global_x64):
  with jax.enable_x64(False):
    config.update("jax_enable_x64", True)
    assert not config.jax_enable_x64
  assert config.jax_enable_x64


@pytest.mark.parametrize("name,manager,value", MANAGERS, ids=NAMES)
def test_nested_blocks_restore_the_outer_value(name, manager, value):
  default = getattr(config, name)
  with manager(value):
    with manager(default):
      assert getattr(config, name) == default
      with pytest.raises(KeyError):
        with manager(value):
          assert getattr(config, name) == value
          raise KeyError("leaves the block")
      assert getattr(config, name) == default
    assert getattr(config, name) == value
    assert config.read(name) == value
    assert config._values[name] == default  # the global value is untouched
  assert getattr(config, name) == default


def test_nested_blocks_in_another_thread():
  seen = []

  def run():
    with jax.enable_x64():
      with jax.enable_x64(False):
        seen.append(jnp.arange(3).dtype)
      seen.append(jnp.arange(3).dtype)
    seen.append(jnp.arange(3).dtype)

  run_threads(run)
  assert seen == [np.int32, np.int64, np.int32]


def test_trace_state_is_the_threads():
  step = barrier(2)
  states = {}

  def a():
    with jax.enable_x64(), jax.threefry_partitionable(False):
      step.wait()
      states["a"] = config.trace_state()
      step.wait()

  def b():
    step.wait()
    states["b"] = config.trace_state()
    step.wait()

  run_threads(a, b)
  assert states["b"] == config.trace_state()
  assert states["a"] != states["b"]


def test_jit_traces_per_thread_settings():
  """A trace made under one thread's settings is not reused under
  another's: rank promotion 'raise' still raises, x64 still widens."""
  traced = []

  @jax.jit
  def add(x, y):
    traced.append(threading.current_thread().name)
    return x + y

  x, y = jnp.ones(3, np.int32), jnp.ones((2, 1), np.int32)
  step = barrier(2)
  seen = {}

  def allow():
    seen["allow"] = add(x, y).shape
    step.wait()
    step.wait()

  def strict():
    with jax.numpy_rank_promotion("raise"):
      step.wait()  # `allow` has traced add
      with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
        add(x, y)
    with jax.enable_x64():
      seen["x64"] = add(x, 1.5).dtype
    step.wait()

  run_threads(allow, strict)
  assert seen == {"allow": (2, 3), "x64": np.float64}
  assert add(x, 1.5).dtype == np.float32
  assert len(traced) == 4  # allow, raise, x64, and the main thread's x64-off trace


def test_unknown_options_and_invalid_values_raise():
  with pytest.raises(AttributeError, match="Unrecognized config option: jax_no_such"):
    config.update("jax_no_such", 1)
  with pytest.raises(AttributeError, match="Unrecognized config option: jax_no_such"):
    config.jax_no_such  # noqa: B018
  with pytest.raises(AttributeError, match="Unrecognized config option: jax_no_such"):
    with config.option("jax_no_such", 1):
      pass
  for name, manager, choices in (
      ("jax_numpy_rank_promotion", jax.numpy_rank_promotion, "'allow', 'warn', 'raise'"),
      ("jax_legacy_prng_key", jax.legacy_prng_key, "'allow', 'warn', 'error'")):
    before = config.read(name)
    for set_it in (lambda: manager("sometimes"), lambda: config.update(name, "sometimes"),
                   lambda: config.option(name, "sometimes").__enter__()):
      with pytest.raises(ValueError, match=f"{name} must be one of \\[{choices}\\]"):
        set_it()
      assert config.read(name) == before


class Worker:
  """A thread that runs the functions given to `call`, one at a time, in
  the order given: so the caller decides the interleaving."""

  def __init__(self):
    self.requests, self.replies = queue.Queue(), queue.Queue()
    self.thread = threading.Thread(target=self._serve, daemon=True)
    self.thread.start()

  def _serve(self):
    while (fn := self.requests.get()) is not None:
      try:
        self.replies.put((True, fn()))
      except Exception as e:  # noqa: BLE001 (re-raised by call)
        self.replies.put((False, e))

  def call(self, fn):
    self.requests.put(fn)
    ok, result = self.replies.get(timeout=TIMEOUT)
    if not ok:
      raise result
    return result

  def stop(self):
    self.requests.put(None)
    self.thread.join(TIMEOUT)


# operations: ("enter", option index, value), ("exit",), ("update", option index, value)
THREAD_OPTIONS = [("jax_enable_x64", jax.enable_x64, [False, True]),
                  ("jax_debug_nans", jax.debug_nans, [False, True]),
                  ("jax_numpy_rank_promotion", jax.numpy_rank_promotion,
                   ["allow", "warn", "raise"])]
_operation = st.one_of(
    st.tuples(st.just("exit")),
    *[st.tuples(st.sampled_from(["enter", "update"]), st.just(i), st.sampled_from(values))
      for i, (_, _, values) in enumerate(THREAD_OPTIONS)])


@given(st.integers(2, 4).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), _operation), max_size=15))))
def test_random_interleavings_match_a_model(case):
  n, operations = case
  names = [name for name, _, _ in THREAD_OPTIONS]
  global_before = {name: config._values[name] for name in names}
  model_global = dict(global_before)
  model_stacks = [[] for _ in range(n)]  # per thread: the open blocks' (name, value)
  workers = [Worker() for _ in range(n)]
  entered = [[] for _ in range(n)]  # per thread: its open context managers

  def reads():
    return tuple(getattr(config, name) for name in names)

  def dtypes():
    return jnp.arange(3).dtype, arange_plus(1)[1].dtype

  def expected(t):
    values = dict(model_global)
    for name, value in model_stacks[t]:
      values[name] = value
    return tuple(values[name] for name in names)

  try:
    for t, op in operations:
      if op[0] == "enter":
        name, manager, _ = THREAD_OPTIONS[op[1]]
        cm = manager(op[2])
        workers[t].call(cm.__enter__)
        entered[t].append(cm)
        model_stacks[t].append((name, op[2]))
      elif op[0] == "exit" and entered[t]:
        workers[t].call(lambda cm=entered[t].pop(): cm.__exit__(None, None, None))
        model_stacks[t].pop()
      elif op[0] == "update":
        name = THREAD_OPTIONS[op[1]][0]
        workers[t].call(lambda: config.update(name, op[2]))
        model_global[name] = op[2]
      for u in range(n):
        assert workers[u].call(reads) == expected(u)
      assert workers[t].call(dtypes) == expected_dtypes(expected(t)[0])
    for t in range(n):
      while entered[t]:
        workers[t].call(lambda cm=entered[t].pop(): cm.__exit__(None, None, None))
      model_stacks[t].clear()
      assert workers[t].call(reads) == expected(t)
  finally:
    for w in workers:
      w.stop()
    for name, value in global_before.items():
      config.update(name, value)
  assert {name: config._values[name] for name in names} == global_before
  assert current_values() == global_values()  # the main thread never had a block
