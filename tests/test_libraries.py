"""optax's and chex's own test files, run unmodified on refimpl by
`conformance.libraries` (installed with pip, without JAX, into
REFIMPL_LIBRARIES_DIR or ~/.cache/refimpl/libraries the first time): a
selection, each file passing in full. `python -m conformance.libraries
[--library chex]` runs all of them and prints the counts."""

import pytest

from conformance import libraries

SELECTION = {
    "optax": ["transforms/_freezing_test", "transforms/_masking_test",
              "transforms/_clipping_test", "tree_utils/_tree_math_test",
              "losses/_classification_test", "losses/_regression_test", "_src/utils_test",
              "_src/update_test"],
    "chex": ["_src/asserts_chexify_test", "_src/dataclass_test", "_src/dimensions_test",
             "_src/fake_test", "_src/variants_test", "_src/warnings_test"],
}


@pytest.mark.parametrize("library", sorted(SELECTION))
def test_a_selection_of_the_librarys_test_files_passes(library):
  target = libraries.install(library, libraries.default_folder())
  files = libraries.test_files(library, target, SELECTION[library])
  assert len(files) == len(SELECTION[library]), files
  for path in files:
    result = libraries.run_file(target, path, timeout=600)
    assert result["passed"] and not (result["failed"] or result["errors"]), \
        f"{path}: {result['output'][-3000:]}"
