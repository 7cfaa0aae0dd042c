# Client SDK tests, included from tests/CMakeLists.txt (after its helper functions).
# Unit tests reach the SDK's internals through mdcast_sdk_objects; the probes are
# applications: they link the shared libmdcast and see only the public headers.
add_executable(sdk-consumer-probe client-sdk/sdk_consumer_probe.cpp)
target_link_libraries(sdk-consumer-probe PRIVATE mdcast)
mdcast_strict(sdk-consumer-probe)
add_executable(sdk-publisher-probe client-sdk/sdk_publisher_probe.cpp)
target_link_libraries(sdk-publisher-probe PRIVATE mdcast)
mdcast_strict(sdk-publisher-probe)
add_executable(sdk-book-probe client-sdk/sdk_book_probe.cpp)
target_link_libraries(sdk-book-probe PRIVATE mdcast)
mdcast_strict(sdk-book-probe)

set(MDCAST_SDK_ENV
  "MDCAST_SDK_CONSUMER=$<TARGET_FILE:sdk-consumer-probe>"
  "MDCAST_SDK_PUBLISHER=$<TARGET_FILE:sdk-publisher-probe>"
  "MDCAST_SDK_BOOK=$<TARGET_FILE:sdk-book-probe>"
  "MDCAST_DICTIONARY=${PROJECT_SOURCE_DIR}/etc/fields.dict")

mdcast_unit_test(reconnect_policy_test client-sdk/reconnect_policy_test.cpp mdcast_sdk_objects)
mdcast_unit_test(item_sequencer_test client-sdk/item_sequencer_test.cpp mdcast_sdk_objects)
mdcast_unit_test(item_id_index_test client-sdk/item_id_index_test.cpp mdcast_sdk_objects)
mdcast_unit_test(scheduling_test client-sdk/scheduling_test.cpp mdcast_sdk_objects)
mdcast_unit_test(event_queue_test client-sdk/event_queue_test.cpp mdcast_sdk_objects)
mdcast_unit_test(event_writer_test client-sdk/event_writer_test.cpp mdcast_sdk_objects)
mdcast_unit_test(publisher_outbox_test client-sdk/publisher_outbox_test.cpp mdcast_sdk_objects)
mdcast_unit_test(caller_write_gate_test client-sdk/caller_write_gate_test.cpp mdcast_sdk_objects)
mdcast_unit_test(publisher_link_set_test client-sdk/publisher_link_set_test.cpp mdcast_sdk_objects)
mdcast_unit_test(types_test client-sdk/types_test.cpp mdcast_sdk_objects)
mdcast_unit_test(field_list_test client-sdk/field_list_test.cpp mdcast_sdk_objects)
mdcast_unit_test(book_test client-sdk/book_test.cpp mdcast_sdk_objects)
mdcast_unit_test(sdk_log_test client-sdk/sdk_log_test.cpp mdcast_sdk_objects)
mdcast_unit_test(interest_tracker_test distributor/interest_tracker_test.cpp mdcast_distributor_core)
foreach(test reconnect_policy_test item_sequencer_test item_id_index_test event_queue_test
             event_writer_test publisher_outbox_test caller_write_gate_test sdk_log_test
             publisher_link_set_test book_test)
  target_include_directories(${test} PRIVATE ${PROJECT_SOURCE_DIR}/client-sdk/src)
endforeach()

# Integration: the probes against real distributor and server binaries.
function(mdcast_sdk_integration_test name script timeout)
  mdcast_integration_test(${name} ${script} ${timeout})
  set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT ${MDCAST_SDK_ENV})
  set_property(TEST ${name} APPEND PROPERTY LABELS sdk)
endfunction()
mdcast_sdk_integration_test(integration_sdk_failover integration/test_sdk_failover.py 180)
mdcast_sdk_integration_test(integration_books integration/test_books.py 240)
# Views inside entries (docs/books.md, "Views").
mdcast_sdk_integration_test(integration_book_views integration/test_book_views.py 240)
# The largest book the defaults allow, whole through the backbone's parts.
mdcast_sdk_integration_test(integration_book_large integration/test_book_large.py 240)
# Book recovery (docs/books.md, "Recovery"): failover, late join, a slow reader; loss, source restart.
mdcast_sdk_integration_test(integration_book_failover integration/test_book_failover.py 180)
mdcast_sdk_integration_test(integration_book_recovery integration/test_book_recovery.py 240)
# Books on the WebSocket/JSON port (docs/websocket.md, "Books"): early and late subscribers.
mdcast_sdk_integration_test(integration_ws_books integration/test_ws_books.py 240)
# mdcastctl's drain moves SDK consumers (test_mdcastctl.py uses the failover checks).
mdcast_sdk_integration_test(integration_mdcastctl integration/test_mdcastctl.py 180)
mdcast_sdk_integration_test(integration_sdk_consumer integration/test_sdk_consumer.py 120)
mdcast_sdk_integration_test(integration_sdk_publisher integration/test_sdk_publisher.py 180)
mdcast_sdk_integration_test(integration_posting integration/test_posting.py 240)
set_property(TEST integration_posting APPEND PROPERTY ENVIRONMENT
             "MDCAST_BENCH_PUBLISHER=$<TARGET_FILE:mdcast-bench-publisher>"
             "MDCAST_BENCH_POSTER=$<TARGET_FILE:mdcast-bench-poster>")
# The cascade's posts go through an edge to the bench publisher (test_posting's helpers).
mdcast_sdk_integration_test(integration_cascade integration/test_cascade.py 420)
set_property(TEST integration_cascade APPEND PROPERTY ENVIRONMENT
             "MDCAST_BENCH_PUBLISHER=$<TARGET_FILE:mdcast-bench-publisher>"
             "MDCAST_BENCH_POSTER=$<TARGET_FILE:mdcast-bench-poster>")
# Slow and lossy links: a throttling relay between edge and hub, outages, resync.
mdcast_sdk_integration_test(integration_cascade_link integration/test_cascade_link.py 300)
# The warm standby link: a second parent kept logged in, taken at once.
mdcast_sdk_integration_test(integration_cascade_standby integration/test_cascade_standby.py 180)
mdcast_sdk_integration_test(integration_conflation integration/test_conflation.py 120)
mdcast_sdk_integration_test(integration_trade_conflation integration/test_trade_conflation.py 120)
mdcast_sdk_integration_test(integration_group_status integration/test_group_status.py 240)
# Redundant sources: mdcast-client and an SDK consumer watch every item across switches.
mdcast_sdk_integration_test(integration_redundancy integration/test_redundancy.py 300)
# Two services, one of them grouped: a switch moves only its own service's items.
mdcast_sdk_integration_test(integration_redundancy_services integration/test_redundancy_services.py 180)
# Standby publishers on one distributor: the same two clients across the switches.
mdcast_sdk_integration_test(integration_standby_publisher integration/test_standby_publisher.py 240)
# One dual-homed SDK publisher feeding two distributors: one killed and restarted.
mdcast_sdk_integration_test(integration_dual_home integration/test_dual_home.py 300)
# The same with the active distributor's path cut in network namespaces (needs root; 77: skipped).
mdcast_sdk_integration_test(integration_netns_dual_home integration/test_netns_dual_home.py 240)
set_tests_properties(integration_netns_dual_home PROPERTIES SKIP_RETURN_CODE 77
                     LABELS "integration;netns;sdk")
mdcast_sdk_integration_test(integration_tls integration/test_tls.py 240)
# Against the installed SDK: the installed examples built and run on a local
# stack; every C++ block of README.md and docs/*.md built.
mdcast_sdk_integration_test(integration_sdk_install integration/test_sdk_install.py 300)
mdcast_sdk_integration_test(integration_doc_snippets integration/test_doc_snippets.py 600)
foreach(test integration_sdk_install integration_doc_snippets)
  set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT "MDCAST_BUILD_DIR=${CMAKE_BINARY_DIR}")
  # A sanitizer build's libmdcast needs programs built with the same sanitizer.
  if(MDCAST_SANITIZE)
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
                 "MDCAST_EXAMPLE_FLAGS=-fsanitize=address,undefined")
  elseif(MDCAST_SANITIZE_THREAD)
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT "MDCAST_EXAMPLE_FLAGS=-fsanitize=thread")
  endif()
endforeach()
mdcast_unit_test(publisher_backpressure_test client-sdk/publisher_backpressure_test.cpp
                 mdcast_sdk_objects)
mdcast_unit_test(consumer_test client-sdk/consumer_test.cpp mdcast_sdk_objects)
mdcast_unit_test(consumer_books_test client-sdk/consumer_books_test.cpp mdcast_sdk_objects)
mdcast_unit_test(consumer_request_limits_test client-sdk/consumer_request_limits_test.cpp
                 mdcast_sdk_objects)
mdcast_unit_test(consumer_group_status_test client-sdk/consumer_group_status_test.cpp mdcast_sdk_objects)
mdcast_unit_test(consumer_close_reason_test client-sdk/consumer_close_reason_test.cpp mdcast_sdk_objects)
mdcast_unit_test(publisher_test client-sdk/publisher_test.cpp mdcast_sdk_objects)
mdcast_unit_test(publisher_fan_test client-sdk/publisher_fan_test.cpp mdcast_sdk_objects)
mdcast_unit_test(publisher_frame_limit_test client-sdk/publisher_frame_limit_test.cpp
                 mdcast_sdk_objects)
# libmdcast.so needs neither yaml-cpp nor libsystemd (the SDK links only common/ root and net/).
find_program(MDCAST_READELF readelf REQUIRED)
add_test(NAME sdk_needed_libraries
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/client-sdk/check_sdk_needed.sh ${MDCAST_READELF} $<TARGET_FILE:mdcast>)
set_tests_properties(sdk_needed_libraries PROPERTIES TIMEOUT 30 LABELS sdk)
if(MDCAST_BUILD_PYTHON)
  include(client-sdk/python/tests.cmake)
endif()

# The Consumer's overload set, compiled against the public headers alone: the
# good calls compile cleanly, and each ambiguous-looking call (a braced list
# given to the one-item subscribe or snapshot) is refused as a deleted function,
# not silently taken for something else.
set(MDCAST_API_COMPILE ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only -Wall -Wextra -Werror
    -I${PROJECT_SOURCE_DIR}/client-sdk/include ${CMAKE_CURRENT_SOURCE_DIR}/client-sdk/api_overloads_compile.cpp)
add_test(NAME sdk_api_overloads_good COMMAND ${MDCAST_API_COMPILE})
set_tests_properties(sdk_api_overloads_good PROPERTIES LABELS sdk TIMEOUT 120)
foreach(bad 1 2 3)
  add_test(NAME sdk_api_overloads_bad_${bad} COMMAND ${MDCAST_API_COMPILE} -DMDCAST_BAD=${bad})
  set_tests_properties(sdk_api_overloads_bad_${bad} PROPERTIES LABELS sdk TIMEOUT 120
    PASS_REGULAR_EXPRESSION "use of deleted function[^\n]*Consumer::(subscribe|snapshot)\\(const std::string&, std::initializer_list")
endforeach()
