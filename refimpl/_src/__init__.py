"""`refimpl._src`: the few of JAX's private modules (`jax._src.X`) that JAX
libraries import and patch, where refimpl has the same seam. They load on
first attribute access, as `jax._src.xla_bridge` is there after `import jax`."""

from refimpl._lazy_loader import attach as _attach_lazy

__getattr__, __dir__ = _attach_lazy(__name__, ("compiler", "xla_bridge"))
del _attach_lazy
