# tests/readme: README.md's C++ snippets, compiled and run, so that they cannot drift from the
# library. extract_snippets.cmake turns every ```cpp block into one function of a single
# generated program (one compile for all of them), which readme_snippets runs in order on this
# build's libloom, as a user's program would link it. No GoogleTest binary here.
set(_readme_cpp ${CMAKE_CURRENT_BINARY_DIR}/readme/readme_snippets.cpp)
add_custom_command(
  OUTPUT ${_readme_cpp}
  COMMAND ${CMAKE_COMMAND} -DREADME=${PROJECT_SOURCE_DIR}/README.md -DOUTPUT=${_readme_cpp}
          -P ${CMAKE_CURRENT_LIST_DIR}/extract_snippets.cmake
  DEPENDS ${PROJECT_SOURCE_DIR}/README.md ${CMAKE_CURRENT_LIST_DIR}/extract_snippets.cmake
  COMMENT "Extracting README.md's C++ snippets")
add_executable(readme_snippets ${_readme_cpp})
target_link_libraries(readme_snippets PRIVATE loom::loom)
add_test(NAME readme_snippets COMMAND readme_snippets)
set_tests_properties(readme_snippets PROPERTIES LABELS cpu TIMEOUT 120
                     PASS_REGULAR_EXPRESSION "README.md: [1-9][0-9]* C\\+\\+ snippets ran")
