# Which of loom's headers are public (installed, and the only ones apps/ and outside programs
# include) and which are internal (the library's own). The rule, in this one place: a header
# under src/ is internal when
#   1. its first line starts "// Internal:", or
#   2. it lies in a backend's implementation folder (LOOM_INTERNAL_FOLDERS), or
#   3. it includes a header of a library loom links privately (LOOM_PRIVATE_INCLUDE_REGEX):
#      the CUDA runtime and libraries, cuDNN, NCCL, MPI, Eigen, nlohmann/json. A program built
#      against the package has none of them on its include path.
# Every other header is public. tests/consumer/check_headers.cmake checks the install against it.

set(LOOM_INTERNAL_FOLDERS ops/cpu ops/cuda distributed/mpi)
set(LOOM_PRIVATE_INCLUDE_REGEX
    "^(cuda[A-Za-z_]*|cudnn[A-Za-z_]*|cublas[A-Za-z_]*|curand[A-Za-z_]*|cusolver[A-Za-z_]*|nccl|mpi)\\.h$|^(Eigen|nlohmann)/")

# loom_classify_headers(SOURCE_DIR PUBLIC_VAR INTERNAL_VAR): the headers under SOURCE_DIR/src
# (paths relative to it, e.g. tensor/tensor.h), split by the rule above.
function(loom_classify_headers source_dir public_var internal_var)
  if(CMAKE_SCRIPT_MODE_FILE)  # a -P script (the install_headers test) re-globs on every run
    file(GLOB_RECURSE _headers RELATIVE ${source_dir}/src ${source_dir}/src/*.h)
  else()
    file(GLOB_RECURSE _headers RELATIVE ${source_dir}/src CONFIGURE_DEPENDS ${source_dir}/src/*.h)
  endif()
  list(SORT _headers)
  set(_public)
  set(_internal)
  foreach(_header ${_headers})
    set(_is_internal OFF)
    foreach(_folder ${LOOM_INTERNAL_FOLDERS})
      if(_header MATCHES "^${_folder}/")
        set(_is_internal ON)
      endif()
    endforeach()
    file(STRINGS ${source_dir}/src/${_header} _first LIMIT_COUNT 1)
    if(_first MATCHES "^// Internal:")
      set(_is_internal ON)
    endif()
    file(STRINGS ${source_dir}/src/${_header} _includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    foreach(_line ${_includes})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*" "\\1" _name "${_line}")
      if(_name MATCHES "${LOOM_PRIVATE_INCLUDE_REGEX}")
        set(_is_internal ON)
      endif()
    endforeach()
    if(_is_internal)
      list(APPEND _internal ${_header})
    else()
      list(APPEND _public ${_header})
    endif()
  endforeach()
  set(${public_var} ${_public} PARENT_SCOPE)
  set(${internal_var} ${_internal} PARENT_SCOPE)
endfunction()

# loom_check_room_links(SOURCE_DIR): include/loom/ holds one relative symlink per room of src/
# (and one for loom.h), so that <loom/ROOM/FILE.h> names a path of the repository. A room
# without its link fails the configure, saying how to add it.
function(loom_check_room_links source_dir)
  file(GLOB _entries LIST_DIRECTORIES true RELATIVE ${source_dir}/src ${source_dir}/src/*)
  foreach(_entry ${_entries})
    if(NOT IS_DIRECTORY ${source_dir}/src/${_entry} AND NOT _entry MATCHES "\\.h$")
      continue()
    endif()
    set(_link ${source_dir}/include/loom/${_entry})
    if(NOT IS_SYMLINK ${_link})
      message(FATAL_ERROR "src/${_entry} has no link in include/loom/, so <loom/${_entry}...> does not "
              "resolve: run  ln -s ../../src/${_entry} include/loom/${_entry}  and commit the link")
    endif()
    file(READ_SYMLINK ${_link} _target)
    if(NOT _target STREQUAL "../../src/${_entry}")
      message(FATAL_ERROR "include/loom/${_entry} points at ${_target}, not ../../src/${_entry}")
    endif()
  endforeach()
endfunction()
