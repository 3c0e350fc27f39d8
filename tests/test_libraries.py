"""optax's own test files, run unmodified on refimpl by `conformance.libraries`
(installed with pip, without JAX, into REFIMPL_LIBRARIES_DIR or
~/.cache/refimpl/libraries the first time): a selection, each file passing in
full. `python -m conformance.libraries` runs all of them and prints the counts."""

from conformance import libraries

SELECTION = ["transforms/_freezing_test", "transforms/_masking_test", "transforms/_clipping_test",
             "tree_utils/_tree_math_test", "losses/_classification_test",
             "losses/_regression_test", "_src/utils_test", "_src/update_test"]


def test_a_selection_of_optax_test_files_passes():
  target = libraries.install("optax", libraries.default_folder())
  files = libraries.test_files("optax", target, SELECTION)
  assert len(files) == len(SELECTION), files
  for path in files:
    result = libraries.run_file(target, path, timeout=600)
    assert result["passed"] and not (result["failed"] or result["errors"]), \
        f"{path}: {result['output'][-3000:]}"
