# Whether to build the CUDA backend (gpu/): AUTODIST_CUDA=ON requires the toolkit, OFF skips it,
# AUTO (the default) builds it when the toolkit is found. Sets AUTODIST_WITH_CUDA.
set(AUTODIST_CUDA AUTO CACHE STRING "Build the CUDA backend: ON, OFF or AUTO (when nvcc is found)")
set_property(CACHE AUTODIST_CUDA PROPERTY STRINGS ON OFF AUTO)
string(TOUPPER "${AUTODIST_CUDA}" autodist_cuda_choice)
if(NOT autodist_cuda_choice MATCHES "^(ON|OFF|AUTO)$")
  message(FATAL_ERROR "AUTODIST_CUDA must be ON, OFF or AUTO, got '${AUTODIST_CUDA}'")
endif()

set(AUTODIST_WITH_CUDA OFF)
if(autodist_cuda_choice STREQUAL "OFF")
  message(STATUS "CUDA backend: off (AUTODIST_CUDA=OFF)")
else()
  # The toolkit's usual home, for shells whose PATH lacks it.
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # sm_90 machine code (H100, H200) and compute_90 PTX, which the driver compiles for newer
    # devices.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    # CMake 3.25 does not know that nvcc 12+ compiles C++20; tell it, so that CUDA sources get the
    # C++ standard of the rest of the build.
    if(CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0 AND NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
      set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    # Imported targets that name /usr/include must not put it before the C++ library's own
    # headers (its <cmath> then misses <math.h>): it is the host compiler's implicit directory.
    list(APPEND CMAKE_CUDA_IMPLICIT_INCLUDE_DIRECTORIES ${CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES})
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    # The runtime comes in as CUDA::cudart_static (a full path): CMake 3.25 reads no link
    # directories from nvcc 13, so its implicit -lcudart_static -lcudadevrt would not be found.
    set(CMAKE_CUDA_RUNTIME_LIBRARY None)
    set(AUTODIST_WITH_CUDA ON)
    message(STATUS "CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures "
                   "${CMAKE_CUDA_ARCHITECTURES})")
  elseif(autodist_cuda_choice STREQUAL "ON")
    message(FATAL_ERROR "AUTODIST_CUDA=ON but no CUDA compiler was found: install the CUDA "
                        "toolkit, or set CUDACXX or CMAKE_CUDA_COMPILER to nvcc")
  else()
    message(STATUS "CUDA backend: off (no CUDA toolkit found; AUTODIST_CUDA=ON to require it)")
  endif()
endif()
