# Strict warnings for this project's own targets. The interface target is linked
# PRIVATE and never exported, so consumers of gpt2 do not inherit these flags.
add_library(gpt2_warnings INTERFACE)
target_compile_options(gpt2_warnings INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow=local -Wnon-virtual-dtor
                                 -Wcast-align -Wunused -Woverloaded-virtual -Wnull-dereference>)
