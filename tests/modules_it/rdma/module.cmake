# module.cmake -- the RDMA module built on the fake device, for the suites
# that run it without RDMA hardware.
#
# Target: rdma_fake_module, a module library built by keel_add_module() from
# the same sources as modules/rdma (the global property
# KEEL_RDMA_MODULE_SOURCES, every file but rdma_ops_verbs.c) linked with
# keel_rdma_fake (fake.cmake) instead of librdmacm and libibverbs: there
# rdma_ops_get() returns the fake's table. It only needs the libraries'
# headers. Output: ${CMAKE_CURRENT_BINARY_DIR}/rdma_fake_module.so
# (build/<type>/tests/modules_it/rdma/rdma_fake_module.so); suites use
# $<TARGET_FILE:rdma_fake_module>. It loads like rdma.so (module name
# "rdma", the same directives) and logs "device ops: fake" at load.
#
# Also registers integration.rdma_server (check_it_rdma_server.c) and
# modules.rdma_nodevice: the shipped rdma.so in a real
# keel-server on this machine, which has no RDMA device (rdma_nodevice_test.sh).
get_property(keel_rdma_sources GLOBAL PROPERTY KEEL_RDMA_MODULE_SOURCES)
get_property(keel_rdma_dir GLOBAL PROPERTY KEEL_RDMA_MODULE_DIR)

if(TARGET keel_rdma_fake AND keel_rdma_sources)
    keel_add_module(rdma_fake_module ${keel_rdma_sources})
    # The fake is linked into a shared object.
    set_target_properties(keel_rdma_fake PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_include_directories(rdma_fake_module PRIVATE ${keel_rdma_dir} ${CMAKE_CURRENT_SOURCE_DIR})
    target_link_libraries(rdma_fake_module PRIVATE keel_rdma_fake Threads::Threads)
    set_target_properties(rdma_fake_module PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
else()
    message(STATUS "keel_rdma_fake (fake.cmake) not defined: rdma_fake_module is not built")
endif()

# integration.rdma_server: the listener (CONFIG SET rdma-port/rdma-bind,
# the restore after a failed one, MODULE UNLOAD with connections open) and
# the server's rules for RDMA connections (maxclients, timeout), with the
# suite's client (rdma_client.c, suite.cmake's) on the fake device.
if(TARGET rdma_fake_module AND TARGET keel_it_harness AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/rdma_client.c)
    add_executable(check_it_rdma_server ${CMAKE_CURRENT_SOURCE_DIR}/check_it_rdma_server.c
                   ${CMAKE_CURRENT_SOURCE_DIR}/rdma_client.c)
    target_include_directories(check_it_rdma_server PRIVATE ${PROJECT_SOURCE_DIR}/tests/integration
                               ${CMAKE_CURRENT_SOURCE_DIR} ${keel_rdma_dir})
    target_link_libraries(check_it_rdma_server PRIVATE keel_it_harness keel_rdma_fake)
    add_dependencies(check_it_rdma_server keel-server rdma_fake_module)
    add_test(NAME integration.rdma_server COMMAND check_it_rdma_server)
    set_tests_properties(integration.rdma_server PROPERTIES
        ENVIRONMENT "KEEL_SERVER=$<TARGET_FILE:keel-server>;KEEL_RDMA_MODULE=$<TARGET_FILE:rdma_fake_module>;CK_FORK=no"
        TIMEOUT 300 LABELS "integration;modules")
endif()

find_program(KEEL_RDMA_IT_REDIS_CLI redis-cli)
if(TARGET rdma AND TARGET keel-server AND KEEL_RDMA_IT_REDIS_CLI)
    add_test(NAME modules.rdma_nodevice
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/rdma_nodevice_test.sh
                     $<TARGET_FILE:keel-server> $<TARGET_FILE:rdma>)
    set_tests_properties(modules.rdma_nodevice PROPERTIES TIMEOUT 120 LABELS "integration;modules")
else()
    message(STATUS "the rdma module or redis-cli not found: modules.rdma_nodevice is not registered")
endif()
