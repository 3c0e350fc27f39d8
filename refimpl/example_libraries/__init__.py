"""`refimpl.example_libraries`: JAX's example libraries, as `jax.example_libraries`.

`optimizers` (first-order optimizers over pytrees of parameters) and `stax`
(neural-network layers as `(init_fun, apply_fun)` pairs): small libraries
written on the public API, as examples of it.
"""
