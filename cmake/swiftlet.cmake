# Shared build rules for first-party code.

set(SWIFTLET_WARNINGS -Wall -Wextra -Werror)

if(SWIFTLET_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined
                      # AddressSanitizer's own advice is -O1, and line tables are
                      # all its stack traces need: together they build this tree
                      # about 2.5x faster than -O2 -g (CI runs on two cores).
                      -O1 -g1)
  # Executables not position-independent: the sanitizers' metadata holds
  # pointers, ~730,000 in `swiftlet`, which a PIE's loader relocates at
  # every start (`swiftlet inspect` on a missing file: 0.16 s as a PIE,
  # 0.12 s without; the tests start these binaries thousands of times).
  add_link_options(-fsanitize=address,undefined -no-pie)
endif()
# LLVM's lld (Debian's lld, scripts/setup.sh installs it) links 3-4x faster
# than GNU ld: `swiftlet` in 0.23 s against 0.78 s, 1.1 s against 4.6 s
# under the sanitizers, where the ~40 links of the tree took a minute on two
# cores. GNU ld where lld is missing.
include(CheckLinkerFlag)
check_linker_flag(CXX -fuse-ld=lld SWIFTLET_HAVE_LLD)
if(SWIFTLET_HAVE_LLD)
  add_link_options($<$<LINK_LANGUAGE:CXX>:-fuse-ld=lld>)
endif()
# The folders the sanitizer tree still optimizes (-O1): where the tests
# spend their time (the forward pass, its kernels, the KV cache, the
# tokenizers, the compute pool, perf's bandwidth and peak probes) and what
# the fuzz targets run (gguf, api, http; but for Beast's websocket stream,
# src/http/CMakeLists.txt). The rest, the request handling
# and tools above them, build at -O0, twice as fast, and run a small share
# of any test.
set(SWIFTLET_SANITIZE_OPTIMIZED core kernels kv model engine perf text gguf api http)

include(${CMAKE_CURRENT_LIST_DIR}/layers.cmake)

# swiftlet_library(FOLDER SOURCES ... DEPS ... [EXTERNAL ...] [PUBLIC_EXTERNAL ...])
# One static library, swiftlet_<FOLDER>, per src/ folder. DEPS are the
# swiftlet folders it uses (by folder name), each on the folder's line of
# cmake/layers.cmake, linked PRIVATE: a library's users see its own include
# directory and nothing else, so a public header may include only headers of
# core and of its own folder, plus folders every one of its users may use
# themselves. EXTERNAL are third-party targets linked PRIVATE;
# PUBLIC_EXTERNAL those a public header needs (absl::status for core/status.h).
function(swiftlet_library folder)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;EXTERNAL;PUBLIC_EXTERNAL" ${ARGN})
  if(NOT DEFINED SWIFTLET_LAYER_${folder})
    message(FATAL_ERROR "swiftlet_library(${folder}): no such folder in cmake/layers.cmake")
  endif()
  set(deps "")
  foreach(dep IN LISTS ARG_DEPS)
    if(NOT dep IN_LIST SWIFTLET_LAYER_${folder})
      message(FATAL_ERROR "swiftlet_library(${folder}): ${folder} may not use ${dep} "
                          "(its line in cmake/layers.cmake: ${SWIFTLET_LAYER_${folder}})")
    endif()
    list(APPEND deps swiftlet_${dep})
  endforeach()
  foreach(ext IN LISTS ARG_EXTERNAL ARG_PUBLIC_EXTERNAL)
    if(ext MATCHES "^swiftlet_")
      message(FATAL_ERROR "swiftlet_library(${folder}): ${ext} is a swiftlet library: list it in DEPS")
    endif()
  endforeach()
  add_library(swiftlet_${folder} STATIC ${ARG_SOURCES})
  # Each library exposes only its own folder: include/<folder>/<folder> is a
  # link to src/<folder>, so "gguf/gguf_file.h" resolves only for targets
  # that link swiftlet_gguf directly.
  set(inc ${CMAKE_BINARY_DIR}/include/${folder})
  file(MAKE_DIRECTORY ${inc})
  if(NOT EXISTS ${inc}/${folder})
    file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR} ${inc}/${folder} SYMBOLIC)
  endif()
  target_include_directories(swiftlet_${folder} PUBLIC ${inc})
  # nvcc takes its own flags: the warnings are for C++ sources.
  target_compile_options(swiftlet_${folder} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${SWIFTLET_WARNINGS}>")
  if(SWIFTLET_SANITIZE AND NOT folder IN_LIST SWIFTLET_SANITIZE_OPTIMIZED)
    target_compile_options(swiftlet_${folder} PRIVATE -O0)
  endif()
  target_link_libraries(swiftlet_${folder} PRIVATE ${deps} ${ARG_EXTERNAL} PUBLIC ${ARG_PUBLIC_EXTERNAL})
endfunction()

# swiftlet_embed_text(OUT_CC FILE HEADER FUNCTION)
# Compiles FILE (a data file under data/, say) into the binary: writes
# OUT_CC defining `std::string_view FUNCTION()` (declared in HEADER, a
# qualified name such as swiftlet::translate::BuiltInLanguageTable) that
# returns the file's bytes. Read at configure time; a change to the file
# re-runs CMake. So a binary copied or installed anywhere needs no data
# directory.
function(swiftlet_embed_text out_cc file header function)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  file(READ ${file} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  file(RELATIVE_PATH source ${PROJECT_SOURCE_DIR} ${file})
  file(CONFIGURE OUTPUT ${out_cc} CONTENT "// Generated by CMake from ${source} (swiftlet_embed_text).
#include \"${header}\"

std::string_view ${function}() {
  // unsigned: UTF-8 bytes above 0x7f do not narrow. Inside the function,
  // so a unity build's batch of these files holds one kBytes each.
  static constexpr unsigned char kBytes[] = {${bytes} 0};
  return {reinterpret_cast<const char*>(kBytes), sizeof(kBytes) - 1};
}
")
endfunction()
