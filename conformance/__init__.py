"""The conformance suite: the executable specification of refimpl's semantics."""
