# Shared build rules for first-party code.

set(SWIFTLET_WARNINGS -Wall -Wextra -Werror)

if(SWIFTLET_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined
                      # AddressSanitizer's own advice is -O1, and line tables are
                      # all its stack traces need: together they build this tree
                      # about 2.5x faster than -O2 -g (CI runs on two cores).
                      -O1 -g1)
  add_link_options(-fsanitize=address,undefined)
endif()

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
  target_compile_options(swiftlet_${folder} PRIVATE ${SWIFTLET_WARNINGS})
  target_link_libraries(swiftlet_${folder} PRIVATE ${deps} ${ARG_EXTERNAL} PUBLIC ${ARG_PUBLIC_EXTERNAL})
endfunction()
