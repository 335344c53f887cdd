# The suites that drive a real keel-server through the RDMA module
# (included by CMakeLists.txt after fake.cmake and module.cmake).
#
# integration.rdma: the module built on the fake device (rdma_fake_module)
# and this suite's client (rdma_client.c) on the fake too. Named
# integration.* so that CI's io-threads and TSan loops run it.
#
# modules.rdma_hardware: the shipped module (rdma.so) and the same client
# over the real librdmacm/libibverbs (modules/rdma/rdma_ops_verbs.c), run
# only where an RDMA device exists; elsewhere it prints why and is skipped.
# modules.rdma_hardware_fake: that program built on the fake instead.
set(keel_rdma_dir ${PROJECT_SOURCE_DIR}/modules/rdma)

if(TARGET keel_rdma_fake AND TARGET rdma_fake_module)
    add_executable(check_it_rdma ${CMAKE_CURRENT_SOURCE_DIR}/check_it_rdma.c
                   ${CMAKE_CURRENT_SOURCE_DIR}/rdma_client.c)
    target_include_directories(check_it_rdma PRIVATE ${PROJECT_SOURCE_DIR}/tests/integration
                               ${CMAKE_CURRENT_SOURCE_DIR} ${keel_rdma_dir})
    target_link_libraries(check_it_rdma PRIVATE keel_it_harness keel_rdma_fake)
    add_dependencies(check_it_rdma keel-server rdma_fake_module)
    # About 20 s in release; under TSan with 4 I/O threads it has taken 267 s.
    add_test(NAME integration.rdma COMMAND check_it_rdma)
    set_tests_properties(integration.rdma PROPERTIES
        ENVIRONMENT "KEEL_SERVER=$<TARGET_FILE:keel-server>;KEEL_RDMA_MODULE=$<TARGET_FILE:rdma_fake_module>;CK_FORK=no"
        TIMEOUT 600 LABELS "integration;modules")
    # The hardware tier's program on the fake device (its rdma_ops_get() is
    # the fake's) against the module built on it: checks the tier's checks.
    add_executable(check_rdma_hardware_fake ${CMAKE_CURRENT_SOURCE_DIR}/check_rdma_hardware.c
                   ${CMAKE_CURRENT_SOURCE_DIR}/rdma_client.c)
    target_include_directories(check_rdma_hardware_fake PRIVATE
                               ${PROJECT_SOURCE_DIR}/tests/integration ${CMAKE_CURRENT_SOURCE_DIR})
    target_link_libraries(check_rdma_hardware_fake PRIVATE keel_it_harness keel_rdma_fake)
    add_dependencies(check_rdma_hardware_fake keel-server rdma_fake_module)
    add_test(NAME modules.rdma_hardware_fake COMMAND check_rdma_hardware_fake)
    set_tests_properties(modules.rdma_hardware_fake PROPERTIES
        ENVIRONMENT "KEEL_SERVER=$<TARGET_FILE:keel-server>;KEEL_RDMA_MODULE=$<TARGET_FILE:rdma_fake_module>;KEEL_RDMA_HW_ADDR=127.0.0.1;CK_FORK=no"
        TIMEOUT 120 LABELS "integration;modules")
else()
    message(STATUS "the fake RDMA device or the module built on it is missing: integration.rdma is not built")
endif()

pkg_check_modules(KEEL_IT_RDMA_LIBS IMPORTED_TARGET libibverbs librdmacm)
if(KEEL_IT_RDMA_LIBS_FOUND AND EXISTS ${keel_rdma_dir}/rdma_ops_verbs.c)
    add_executable(check_rdma_hardware ${CMAKE_CURRENT_SOURCE_DIR}/check_rdma_hardware.c
                   ${CMAKE_CURRENT_SOURCE_DIR}/rdma_client.c ${keel_rdma_dir}/rdma_ops_verbs.c)
    target_include_directories(check_rdma_hardware PRIVATE ${PROJECT_SOURCE_DIR}/tests/integration
                               ${CMAKE_CURRENT_SOURCE_DIR} ${keel_rdma_dir})
    target_link_libraries(check_rdma_hardware PRIVATE keel_it_harness PkgConfig::KEEL_IT_RDMA_LIBS)
    add_dependencies(check_rdma_hardware keel-server)
    if(TARGET rdma)
        add_dependencies(check_rdma_hardware rdma)
        set(keel_it_rdma_module $<TARGET_FILE:rdma>)
    else()
        set(keel_it_rdma_module ${PROJECT_BINARY_DIR}/modules/rdma.so)
    endif()
    add_test(NAME modules.rdma_hardware COMMAND check_rdma_hardware)
    set_tests_properties(modules.rdma_hardware PROPERTIES
        ENVIRONMENT "KEEL_SERVER=$<TARGET_FILE:keel-server>;KEEL_RDMA_MODULE=${keel_it_rdma_module};CK_FORK=no"
        SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "integration;modules")
else()
    message(STATUS "librdmacm/libibverbs or modules/rdma/rdma_ops_verbs.c missing: modules.rdma_hardware is not built")
endif()
