# cpscale_library(NAME SOURCES ... [DEPS ...]): one static library per component.
function(cpscale_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# cpscale_test(NAME SOURCES ... [DEPS ...] [LABELS ...]): a GoogleTest binary whose
# cases are registered with CTest one by one. LABELS: unit (default) or integration;
# integration binaries are left out when CPSCALE_BUILD_INTEGRATION_TESTS is OFF.
function(cpscale_test name)
  cmake_parse_arguments(ARG "SERIAL" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  if(CPSCALE_SANITIZE)
    # Under ASan+UBSan or TSan a test takes 2-13x its time (the model's heaviest runs
    # 13x); CI also runs them at idle priority beside the integration suite, where one
    # took 289 s of CPU-starved wall time (.ci/run).
    math(EXPR ARG_TIMEOUT "${ARG_TIMEOUT} * 5")
    # Listing a binary's tests is part of its build, timed on the wall clock: CI stops
    # the sanitizers' session for the model's validation (~16 min) whenever it runs.
    set(discovery_timeout 1800)
  else()
    set(discovery_timeout 30)
  endif()
  if("integration" IN_LIST ARG_LABELS AND NOT CPSCALE_BUILD_INTEGRATION_TESTS)
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  include(GoogleTest)
  if("integration" IN_LIST ARG_LABELS)
    # One test per binary: an integration binary starts the real plane once and runs
    # all its cases against it.
    add_test(NAME ${name} COMMAND ${name})
    # COST: ctest starts the costliest first. The integration tests (by their time
    # limits) go before the unit tests, which then run on the other core beside them
    # instead of leaving it idle while the last integration tests run alone.
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
                         RESOURCE_LOCK control_plane COST ${ARG_TIMEOUT})
    if(ARG_SERIAL)
      # Timing-sensitive: nothing else of the suite may share the machine's cores.
      set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
    endif()
  else()
    gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
                         DISCOVERY_TIMEOUT ${discovery_timeout})
  endif()
endfunction()
