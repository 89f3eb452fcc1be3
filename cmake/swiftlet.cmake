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

# swiftlet_library(NAME SOURCES ... DEPS ...)
# One static library per src/ folder. Dependencies are linked PRIVATE except
# where a public header exposes a dependency's types (PUBLIC_DEPS), so an
# include that points the wrong way in DESIGN.md's order fails to build.
function(swiftlet_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(swiftlet_${name} STATIC ${ARG_SOURCES})
  # Each library exposes only its own folder: include/<name>/<folder> is a
  # link to src/<folder>, so "gguf/gguf_file.h" resolves only for targets
  # that link swiftlet_gguf.
  get_filename_component(folder ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  set(inc ${CMAKE_BINARY_DIR}/include/${name})
  file(MAKE_DIRECTORY ${inc})
  if(NOT EXISTS ${inc}/${folder})
    file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR} ${inc}/${folder} SYMBOLIC)
  endif()
  target_include_directories(swiftlet_${name} PUBLIC ${inc})
  target_compile_options(swiftlet_${name} PRIVATE ${SWIFTLET_WARNINGS})
  target_link_libraries(swiftlet_${name} PRIVATE ${ARG_DEPS} PUBLIC ${ARG_PUBLIC_DEPS})
endfunction()
