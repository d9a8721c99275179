# Strict warnings for this project's own targets. The interface target is linked
# PRIVATE and never exported, so consumers of gpt2 do not inherit these flags.
add_library(gpt2_warnings INTERFACE)
target_compile_options(gpt2_warnings INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow=local -Wnon-virtual-dtor
                                 -Wcast-align -Wunused -Woverloaded-virtual>)

# Executables compile with -fPIC (not CMake's -fPIE) so they can reuse the
# library's precompiled header, which GCC only accepts with the same setting.
function(gpt2_reuse_pch target)
  target_compile_options(${target} PRIVATE -fPIC)
  target_precompile_headers(${target} REUSE_FROM gpt2)
endfunction()
