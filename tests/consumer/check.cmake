# The installed package as a user meets it, shared and static:
#  1. installs the tested (shared) build into a scratch prefix and runs the installed
#     loom-catdog --help with an empty environment (RUNPATH $ORIGIN/../lib finds libloom);
#  2. builds and runs the consumer project against that prefix;
#  3. configures and builds loom again as a static library, with the tested build's options and
#     folder of the generated loom/config.h (LOOM_BUILD_INCLUDE_DIR) so that ccache serves its
#     objects, installs it, and builds and runs the consumer against the static package.
# Arguments: LOOM_SOURCE_DIR, LOOM_BUILD_DIR, CONSUMER_SOURCE_DIR, WORK_DIR, LOOM_INCLUDE_DIR,
# GENERATOR, BUILD_TYPE, CXX, WITH_CUDA, WITH_MPI, CUDA_COMPILER, CUDA_ARCHITECTURES, CPU_ARCH,
# HAVE_APPS.
file(REMOVE_RECURSE ${WORK_DIR})

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

function(check_consumer flavour prefix)
  set(build ${WORK_DIR}/consumer-${flavour})
  run("configuring the consumer against the ${flavour} package"
      ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${build} -G ${GENERATOR}
      -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
  run("building the consumer against the ${flavour} package" ${CMAKE_COMMAND} --build ${build})
  run("the consumer program (${flavour})" ${build}/consumer)
  message(STATUS "${flavour}: ${run_output}")
endfunction()

# 1. The shared install and its program.
set(shared ${WORK_DIR}/shared)
run("cmake --install (shared)" ${CMAKE_COMMAND} --install ${LOOM_BUILD_DIR} --prefix ${shared})
if(NOT EXISTS ${shared}/include/loom/config.h OR NOT EXISTS ${shared}/include/loom/nn/conv.h)
  message(FATAL_ERROR "the install lacks include/loom/config.h or include/loom/nn/conv.h")
endif()
file(GLOB _top RELATIVE ${shared}/include ${shared}/include/*)
if(NOT _top STREQUAL "loom")
  message(FATAL_ERROR "include/ holds more than loom/: ${_top}")
endif()
if(HAVE_APPS)
  run("the installed loom-catdog --help with an empty environment"
      env -i ${shared}/bin/loom-catdog --help)
  if(NOT run_output MATCHES "train")
    message(FATAL_ERROR "loom-catdog --help did not list its commands:\n${run_output}")
  endif()
endif()
check_consumer(shared ${shared})

# 2. A static build of the same sources, options and compile lines.
set(static_build ${WORK_DIR}/static-build)
set(static ${WORK_DIR}/static)
set(options -G ${GENERATOR} -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_CXX_COMPILER=${CXX}
    -DBUILD_SHARED_LIBS=OFF -DLOOM_BUILD_TESTS=OFF -DLOOM_BUILD_APPS=OFF -DLOOM_BUILD_BENCH=OFF
    -DLOOM_CUDA=${WITH_CUDA} -DLOOM_MPI=${WITH_MPI} -DLOOM_CPU_ARCH=${CPU_ARCH}
    -DLOOM_BUILD_INCLUDE_DIR=${LOOM_INCLUDE_DIR})
if(WITH_CUDA)
  list(APPEND options -DCMAKE_CUDA_COMPILER=${CUDA_COMPILER}
       "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}")
endif()
run("configuring loom as a static library" ${CMAKE_COMMAND} -S ${LOOM_SOURCE_DIR} -B ${static_build} ${options})
run("building the static libloom" ${CMAKE_COMMAND} --build ${static_build})
run("cmake --install (static)" ${CMAKE_COMMAND} --install ${static_build} --prefix ${static})
file(GLOB_RECURSE _archive ${static}/lib*/libloom.a)
if(NOT _archive)
  message(FATAL_ERROR "the static install has no libloom.a")
endif()
check_consumer(static ${static})
