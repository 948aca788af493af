# libtorch from the PyTorch wheel in the project's virtual environment.
# Only the sim backend (and later torch_plugin) link it; nothing else may.
# Under pip (scikit-build-core) the interpreter running the build is the one
# the package installs into.
if(DEFINED SKBUILD AND DEFINED Python3_EXECUTABLE)
  set(_neuron_default_python "${Python3_EXECUTABLE}")
else()
  set(_neuron_default_python "${CMAKE_SOURCE_DIR}/.venv/bin/python")
endif()
set(NEURON_PYTHON "${_neuron_default_python}" CACHE FILEPATH
    "Python interpreter whose torch package provides libtorch")
# torch_plugin builds its extension module for this interpreter.
set(Python3_EXECUTABLE "${NEURON_PYTHON}" CACHE FILEPATH "" FORCE)
if(NOT EXISTS "${NEURON_PYTHON}")
  message(FATAL_ERROR "No Python at ${NEURON_PYTHON}: run deploy/dev.sh build, "
                      "or pass -DNEURON_PYTHON=/path/to/python with torch installed")
endif()
execute_process(
  # Without backend autoload: the torch_neuronx being built must not load.
  COMMAND "${CMAKE_COMMAND}" -E env TORCH_DEVICE_BACKEND_AUTOLOAD=0
          "${NEURON_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
  OUTPUT_VARIABLE NEURON_TORCH_PREFIX OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE NEURON_TORCH_RESULT)
if(NOT NEURON_TORCH_RESULT EQUAL 0)
  message(FATAL_ERROR "${NEURON_PYTHON} cannot import torch: run deploy/dev.sh build")
endif()
list(APPEND CMAKE_PREFIX_PATH "${NEURON_TORCH_PREFIX}")
# The wheel links Kineto statically into libtorch_cpu, while TorchConfig looks
# for a separate libkineto and warns when it is missing: point it at the
# library that holds Kineto.
get_filename_component(_neuron_torch_root "${NEURON_TORCH_PREFIX}/../.." ABSOLUTE)
set(kineto_LIBRARY "${_neuron_torch_root}/lib/libtorch_cpu.so" CACHE FILEPATH
    "Kineto lives inside libtorch_cpu in the PyTorch wheel")
find_package(Torch REQUIRED)
# Kineto's headers (torch_plugin's profiler), apart from TORCH_INCLUDE_DIRS.
set(NEURON_KINETO_INCLUDE_DIR "${_neuron_torch_root}/include/kineto")
get_filename_component(NEURON_TORCH_LIB_DIR "${TORCH_LIBRARY}" DIRECTORY)

# What the project links: ATen/c10 and their headers, nothing else. The
# `torch` target would also drag in the wheel's MKL link directories and
# Python-facing libraries, which no daemon component needs.
add_library(neuron_libtorch INTERFACE)
target_include_directories(neuron_libtorch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
target_link_libraries(neuron_libtorch INTERFACE
    "${NEURON_TORCH_LIB_DIR}/libtorch_cpu.so" "${NEURON_TORCH_LIB_DIR}/libc10.so")
separate_arguments(_neuron_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(neuron_libtorch INTERFACE ${_neuron_torch_flags})

# The OpenMP runtime libtorch_cpu runs its parallel regions on (the wheel
# ships its own libgomp): code that sets a thread's OpenMP thread count must
# call this copy, never the compiler's, or it sets a runtime ATen ignores.
if(NOT EXISTS "${NEURON_TORCH_LIB_DIR}/libgomp.so.1")
  message(FATAL_ERROR "${NEURON_TORCH_LIB_DIR} has no libgomp.so.1: this torch does not run "
                      "its kernels on GNU OpenMP, which the sim's thread control expects")
endif()
add_library(neuron_libtorch_openmp INTERFACE)
target_link_libraries(neuron_libtorch_openmp INTERFACE "${NEURON_TORCH_LIB_DIR}/libgomp.so.1")
