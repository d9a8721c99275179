# Strict warnings for this project's own targets, held on an interface target
# that is never exported. Targets take its options with gpt2_use_warnings()
# rather than by linking it, so the exported static library does not name it
# among its link dependencies.
add_library(gpt2_warnings INTERFACE)
target_compile_options(gpt2_warnings INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow=local -Wnon-virtual-dtor
                                 -Wcast-align -Wunused -Woverloaded-virtual>)

function(gpt2_use_warnings target)
  target_compile_options(${target} PRIVATE
    $<TARGET_PROPERTY:gpt2_warnings,INTERFACE_COMPILE_OPTIONS>)
endfunction()

# Executables compile with -fPIC (not CMake's -fPIE) so they can reuse the
# library's precompiled header, which GCC only accepts with the same setting.
function(gpt2_reuse_pch target)
  target_compile_options(${target} PRIVATE -fPIC)
  target_precompile_headers(${target} REUSE_FROM gpt2)
endfunction()
