"""NumPy's functions on scalars that the CPU rules and scalar functions call
and numba-cuda does not lower on the device (its database of ufunc loops
lacks them): each added to that database as the libdevice function of the
same meaning. Rounding, square roots, fmod, nextafter and the predicates are
exact, as NumPy's are; the others are libdevice's (docs/backends.md)."""

import numpy as np
from numba.cuda import libdevice
from numba.cuda.core import config


def _loop(fn):
  """A ufunc loop of numba-cuda computing `fn` (a Python function of libdevice's)."""
  def lower(context, builder, signature, args):
    return context.compile_internal(builder, fn, signature, args)
  return lower


_UNARY = {np.exp: (libdevice.expf, libdevice.exp), np.exp2: (libdevice.exp2f, libdevice.exp2),
          np.expm1: (libdevice.expm1f, libdevice.expm1),
          np.log1p: (libdevice.log1pf, libdevice.log1p),
          np.cbrt: (libdevice.cbrtf, libdevice.cbrt), np.sqrt: (libdevice.sqrtf, libdevice.sqrt),
          np.floor: (libdevice.floorf, libdevice.floor), np.ceil: (libdevice.ceilf, libdevice.ceil),
          np.rint: (libdevice.rintf, libdevice.rint), np.trunc: (libdevice.truncf, libdevice.trunc),
          np.fabs: (libdevice.fabsf, libdevice.fabs)}
_BINARY = {np.fmod: (libdevice.fmodf, libdevice.fmod), np.power: (libdevice.powf, libdevice.pow),
           np.nextafter: (libdevice.nextafterf, libdevice.nextafter),
           np.copysign: (libdevice.copysignf, libdevice.copysign)}
_PREDICATES = {np.isfinite: (libdevice.finitef, libdevice.isfinited),
               np.isinf: (libdevice.isinff, libdevice.isinfd)}


def _unary(f):
  return _loop(lambda x: f(x))


def _binary(f):
  return _loop(lambda x, y: f(x, y))


def _predicate(f):
  return _loop(lambda x: f(x) != 0)


def register():
  """Adds the loops to numba-cuda's database (once; not in the simulator,
  whose kernels run NumPy's own)."""
  if config.ENABLE_CUDASIM:
    return
  from numba.cuda.ufuncs import ufunc_db
  db = ufunc_db()
  for table, loop, signatures in ((_UNARY, _unary, ("f->f", "d->d")),
                                  (_BINARY, _binary, ("ff->f", "dd->d")),
                                  (_PREDICATES, _predicate, ("f->?", "d->?"))):
    for ufunc, functions in table.items():
      db.setdefault(ufunc, dict(zip(signatures, map(loop, functions))))
