# Writes a CTest include file with one test per GoogleTest suite of an
# executable (`Suite` runs `--gtest_filter=Suite.*`): each ctest entry is a
# process, and a process of the library's tests spends about half a second
# loading LibTorch, so one per suite instead of one per case saves minutes.
# Suites whose names match ONE_THREAD (a regex alternation, may be empty) run
# with OMP_NUM_THREADS=1. Run after each build of the executable
# (tests/CMakeLists.txt):
#   cmake -D TEST_EXECUTABLE=... -D OUT=... -D TIMEOUT=... -D ONE_THREAD=A|B
#         -P gtest_suites.cmake
execute_process(COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests
                OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests failed (${rc}):\n${listing}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(content "")
foreach(line IN LISTS lines)
  # Suites are the lines that do not start with a space: "Suite." or
  # "Prefix/Suite.  # TypeParam = ..."
  if(line MATCHES "^([^ #][^ ]*)\\.")
    set(suite "${CMAKE_MATCH_1}")
    string(APPEND content
      "add_test([=[${suite}]=] [=[${TEST_EXECUTABLE}]=] [=[--gtest_filter=${suite}.*]=])\n"
      "set_tests_properties([=[${suite}]=] PROPERTIES TIMEOUT ${TIMEOUT})\n")
    if(NOT "${ONE_THREAD}" STREQUAL "" AND suite MATCHES "^(${ONE_THREAD})$")
      string(APPEND content
        "set_tests_properties([=[${suite}]=] PROPERTIES ENVIRONMENT OMP_NUM_THREADS=1)\n")
    endif()
  endif()
endforeach()
file(WRITE "${OUT}" "${content}")
