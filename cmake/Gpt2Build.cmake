# Strict warnings for this project's own targets, held on an interface target
# that is never exported. Targets take its options with gpt2_use_warnings()
# rather than by linking it, so the exported static library does not name it
# among its link dependencies. C++ sources only: nvcc takes none of them.
add_library(gpt2_warnings INTERFACE)
target_compile_options(gpt2_warnings INTERFACE
  $<$<COMPILE_LANG_AND_ID:CXX,GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow=local
                                         -Wnon-virtual-dtor -Wcast-align -Wunused
                                         -Woverloaded-virtual>)

function(gpt2_use_warnings target)
  target_compile_options(${target} PRIVATE
    $<TARGET_PROPERTY:gpt2_warnings,INTERFACE_COMPILE_OPTIONS>)
endfunction()

# Executables compile with -fPIC (not CMake's -fPIE) so they can reuse the
# library's precompiled header, which GCC only accepts with the same setting.
function(gpt2_reuse_pch target)
  target_compile_options(${target} PRIVATE -fPIC)
  target_precompile_headers(${target} REUSE_FROM gpt2_ops)
endfunction()

# One library target per layer of gpt2/: gpt2_<name>, alias and export name
# gpt2::<name>, headers installed under include/gpt2/<name>/.
#   gpt2_add_layer(<name> SOURCES ... HEADERS ... [INTERNAL ...] [PUBLIC ...]
#                  [PRIVATE ...] [MAY_INCLUDE <layer> ...])
# HEADERS are the public (installed) ones; INTERNAL the headers the command
# and the layers above use in the tree but an app does not get (checked for
# includes like the rest, not installed); the others are the layer's own.
# MAY_INCLUDE lists the other layers whose headers this one's files may
# include (`model`), or single headers of a layer (`ops/ops.h`) where only
# those are its public side; any other `#include "gpt2/<folder>/..."` or
# `"apps/..."` fails the configure step, so the arrows between layers are
# checked by the build.
function(gpt2_add_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;HEADERS;INTERNAL;PUBLIC;PRIVATE;MAY_INCLUDE" ${ARGN})
  set(target gpt2_${name})
  add_library(${target} ${L_SOURCES})
  add_library(gpt2::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name} POSITION_INDEPENDENT_CODE ON)
  target_compile_features(${target} PUBLIC cxx_std_17)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PUBLIC ${L_PUBLIC} PRIVATE ${L_PRIVATE})
  gpt2_use_warnings(${target})
  install(TARGETS ${target} EXPORT gpt2Targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  # Installed where the sources include them from: gpt2/ops/ops.h goes to
  # include/gpt2/ops/.
  foreach(header IN LISTS L_HEADERS)
    file(RELATIVE_PATH path ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/${header})
    get_filename_component(folder ${path} DIRECTORY)
    install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${folder})
    set_property(GLOBAL APPEND PROPERTY GPT2_PUBLIC_HEADERS ${path})
  endforeach()

  set(allowed ${name} ${L_MAY_INCLUDE})
  foreach(file IN LISTS L_SOURCES L_HEADERS L_INTERNAL)
    file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/${file} includes REGEX "^#include \"(gpt2|apps)/")
    foreach(line IN LISTS includes)
      string(REGEX MATCH "\"(gpt2|apps)/([^/\"]+)(/[^\"]*)?\"" path "${line}")
      set(folder ${CMAKE_MATCH_2})
      set(header ${CMAKE_MATCH_2}${CMAKE_MATCH_3})
      if(CMAKE_MATCH_1 STREQUAL "apps" OR (NOT folder STREQUAL "error.h" AND
         NOT folder IN_LIST allowed AND NOT header IN_LIST allowed))
        file(RELATIVE_PATH path ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/${file})
        message(FATAL_ERROR "${path}: ${line}\n"
          "gpt2/${name} may include gpt2/error.h and gpt2/{${allowed}} only")
      endif()
    endforeach()
  endforeach()
endfunction()

# The ops layer's internals (gpt2/ops/<folder>/...: kernels, memory) are its
# own: outside gpt2/ops only its public headers (ops.h, settings.h,
# memory.h) may be included. Checks every C++ file under `dir` but those
# under the folders in EXCEPT (the ops layer's own tests).
#   gpt2_refuse_ops_internals(<dir> [EXCEPT <subdir> ...])
function(gpt2_refuse_ops_internals dir)
  cmake_parse_arguments(R "" "" "EXCEPT" ${ARGN})
  file(GLOB_RECURSE files RELATIVE ${dir} ${dir}/*.h ${dir}/*.cpp)
  foreach(file IN LISTS files)
    set(skip FALSE)
    foreach(except IN LISTS R_EXCEPT)
      if(file MATCHES "^${except}/")
        set(skip TRUE)
      endif()
    endforeach()
    if(skip)
      continue()
    endif()
    file(STRINGS ${dir}/${file} includes REGEX "^#include \"gpt2/ops/[^/\"]+/")
    foreach(line IN LISTS includes)
      file(RELATIVE_PATH path ${PROJECT_SOURCE_DIR} ${dir}/${file})
      message(FATAL_ERROR "${path}: ${line}\n"
        "gpt2/ops's internals are its own: include gpt2/ops/ops.h, settings.h or memory.h")
    endforeach()
  endforeach()
endfunction()

# PyTorch's LibTorch (a pip wheel, a pytorch.org archive) carries headers
# of libraries it builds in (fmt 12, oneDNN 3 in 2.11) in the include
# folder that comes first on every compile line, while the build links
# Debian's (libfmt 9, libdnnl 2.6): compiled against one and linked with
# the other, code fails to compile (fmt::join moved) or to link (oneDNN 3's
# functions). Where LibTorch's folder holds one of `names` and `target`'s
# include folder holds it too, a link to `target`'s goes before everything
# (-I: GCC drops an -I that repeats an -isystem folder, and /usr/include is
# one; a link has another name).
function(gpt2_put_before_torch target)
  get_target_property(own_include ${target} INTERFACE_INCLUDE_DIRECTORIES)
  list(GET own_include 0 own_include)
  file(REAL_PATH "${own_include}" own_dir)
  set(first "${PROJECT_BINARY_DIR}/include-first")
  foreach(dir IN LISTS TORCH_INCLUDE_DIRS)
    file(REAL_PATH "${dir}" torch_dir)
    if(torch_dir STREQUAL own_dir)
      continue()
    endif()
    set(shadowed "")
    foreach(name IN LISTS ARGN)
      if(EXISTS "${torch_dir}/${name}" AND EXISTS "${own_dir}/${name}")
        file(MAKE_DIRECTORY "${first}")
        file(CREATE_LINK "${own_dir}/${name}" "${first}/${name}" SYMBOLIC)
        list(APPEND shadowed "${name}")
      endif()
    endforeach()
    if(shadowed)
      include_directories(BEFORE "${first}")
      list(JOIN shadowed ", " shadowed)
      message(STATUS "gpt2: LibTorch's headers ${shadowed} (${torch_dir}) shadowed by ${target}'s (${own_dir})")
    endif()
  endforeach()
endfunction()

# PyPI's torch wheel (2.11) exports std::filesystem's functions from
# libtorch.so (pieces of a newer libstdc++ it carries inside). A program
# whose DT_NEEDED lists libtorch.so before libstdc++.so.6, as the link order
# of torch's own CMake package makes it, binds its std::filesystem calls to
# those copies, and remove_all() there jumps to address 0 (SIGSEGV: the
# checkpoint and trainer tests on a GPU died so). Naming libstdc++ first on
# the link line, needed or not, puts it first in the loader's search
# order. gpt2::gpt2 carries it as an INTERFACE link option, so every
# program that links the library, in this project or an app's, gets it.
set(GPT2_LIBSTDCXX_FIRST "SHELL:-Wl,--push-state,--no-as-needed -lstdc++ -Wl,--pop-state")
