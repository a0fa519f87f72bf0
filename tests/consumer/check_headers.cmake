# The installed headers are the public ones and need nothing a program built against the package
# lacks: installs the tested build into a scratch prefix, then requires of include/loom/ that
#  1. it holds exactly config.h and the headers cmake/headers.cmake calls public (none of the
#     internal ones, no symlinks: the real files);
#  2. no installed header says "// Internal:" on its first line;
#  3. no installed header includes a header of a library loom links privately (the CUDA runtime
#     and libraries, cuDNN, NCCL, MPI, Eigen, nlohmann/json: LOOM_PRIVATE_INCLUDE_REGEX);
#  4. every loom/... (or quoted) include of an installed header is itself installed.
# Arguments: LOOM_SOURCE_DIR, LOOM_BUILD_DIR, WORK_DIR.
cmake_minimum_required(VERSION 3.24)
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${LOOM_BUILD_DIR} --prefix ${WORK_DIR}
                RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_VARIABLE _err)
if(_rc)
  message(FATAL_ERROR "cmake --install failed (${_rc}):\n${_err}")
endif()
include(${LOOM_SOURCE_DIR}/cmake/headers.cmake)
loom_classify_headers(${LOOM_SOURCE_DIR} _public _internal)

set(_root ${WORK_DIR}/include/loom)
file(GLOB_RECURSE _installed LIST_DIRECTORIES false RELATIVE ${_root} ${_root}/*)
list(SORT _installed)
set(_expected ${_public} config.h)
list(SORT _expected)
set(_problems)
if(NOT _installed STREQUAL _expected)
  set(_extra ${_installed})
  list(REMOVE_ITEM _extra ${_expected})
  set(_missing ${_expected})
  list(REMOVE_ITEM _missing ${_installed})
  list(APPEND _problems "installed but not public: ${_extra}" "public but not installed: ${_missing}")
endif()

foreach(_header ${_installed})
  set(_path ${_root}/${_header})
  if(IS_SYMLINK ${_path})
    list(APPEND _problems "${_header} is a symlink, not the file")
  endif()
  file(STRINGS ${_path} _first LIMIT_COUNT 1)
  if(_first MATCHES "^// Internal:")
    list(APPEND _problems "${_header} says it is internal")
  endif()
  file(STRINGS ${_path} _includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  get_filename_component(_dir ${_path} DIRECTORY)
  foreach(_line ${_includes})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*([<\"])([^>\"]+)[>\"].*" "\\1;\\2" _parts "${_line}")
    list(GET _parts 0 _quote)
    list(GET _parts 1 _name)
    if(_name MATCHES "${LOOM_PRIVATE_INCLUDE_REGEX}")
      list(APPEND _problems "${_header} includes <${_name}>, a header of a library loom links privately")
    elseif(_name MATCHES "^loom/")
      string(REGEX REPLACE "^loom/" "" _target "${_name}")
      if(NOT EXISTS ${_root}/${_target})
        if(_target IN_LIST _internal)
          list(APPEND _problems "${_header} includes the internal ${_name}")
        else()
          list(APPEND _problems "${_header} includes ${_name}, which is not installed")
        endif()
      endif()
    elseif(_quote STREQUAL "\"" AND NOT EXISTS ${_dir}/${_name})
      list(APPEND _problems "${_header} includes \"${_name}\", which is not installed beside it")
    endif()
  endforeach()
endforeach()

list(LENGTH _installed _count)
list(LENGTH _internal _internal_count)
if(_problems)
  list(JOIN _problems "\n  " _text)
  message(FATAL_ERROR "the installed headers (${_count}) are not the public API alone:\n  ${_text}")
endif()
message(STATUS "${_count} installed headers, all public and self-contained in the package; "
               "${_internal_count} internal headers left out")
