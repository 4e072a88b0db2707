# The layer check (docs/ARCHITECTURE.md: data flows down; nothing calls up): every quoted
# #include in src/, apps/ and python/src/ must stay within what its layer may use
# (scripts/check-layers.py --help lists the rules). Included from tests/CMakeLists.txt.
add_test(NAME layers COMMAND python3 ${PROJECT_SOURCE_DIR}/scripts/check-layers.py --root ${PROJECT_SOURCE_DIR})
set_tests_properties(layers PROPERTIES LABELS cpu)
