"""Cases for the elementwise primitives and the jnp ufuncs built on them."""

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl import lax
from conformance import strategies as S
from conformance.cases import Case

NUMERIC = S.INT_DTYPES + S.FLOAT_DTYPES + S.COMPLEX_DTYPES

CASES = [
    Case("lax.add", lax.add, lambda: S.case_inputs(NUMERIC, 2), np.add, ("add",)),
    Case("jnp.sin", jnp.sin, lambda: S.case_inputs(S.FLOAT_DTYPES), np.sin, ("sin",)),
    Case("jnp.astype", lambda x, dtype: jnp.astype(x, dtype),
         lambda: S.case_inputs(S.FLOAT_DTYPES, kwargs=st.fixed_dictionaries(
             {"dtype": st.sampled_from([np.uint8, np.int8, np.int32])})),
         primitives=("convert_element_type",), divergence="float_to_int_cast_saturates"),
]
