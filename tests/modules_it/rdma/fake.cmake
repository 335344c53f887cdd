# The fake RDMA device (rdma_fake.h): a static library that the module's
# test build and the test clients link instead of librdmacm/libibverbs,
# whose headers it uses for the types only, and its unit test.
add_library(keel_rdma_fake STATIC
    ${CMAKE_CURRENT_LIST_DIR}/rdma_fake_core.c
    ${CMAKE_CURRENT_LIST_DIR}/rdma_fake_cm.c
    ${CMAKE_CURRENT_LIST_DIR}/rdma_fake_verbs.c)
set_target_properties(keel_rdma_fake PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(keel_rdma_fake PUBLIC
    ${PROJECT_SOURCE_DIR}/modules/rdma ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(keel_rdma_fake PUBLIC Threads::Threads)

add_executable(check_rdma_fake ${CMAKE_CURRENT_LIST_DIR}/check_rdma_fake.c)
target_link_libraries(check_rdma_fake PRIVATE keel_rdma_fake PkgConfig::CHECK)
add_test(NAME modules.check_rdma_fake COMMAND check_rdma_fake)
set_tests_properties(modules.check_rdma_fake PROPERTIES ENVIRONMENT "CK_FORK=no"
                     LABELS "modules" TIMEOUT 120)

# A shared object with its own copy of the fake, which check_rdma_fake
# dlopen()s and dlclose()s: the NIC thread must not outlive the code.
add_library(rdma_fake_dl_probe MODULE ${CMAKE_CURRENT_LIST_DIR}/fake_dl_probe.c)
target_link_libraries(rdma_fake_dl_probe PRIVATE keel_rdma_fake)
target_compile_definitions(check_rdma_fake PRIVATE
    FAKE_DL_PROBE="$<TARGET_FILE:rdma_fake_dl_probe>")
target_link_libraries(check_rdma_fake PRIVATE ${CMAKE_DL_LIBS})
add_dependencies(check_rdma_fake rdma_fake_dl_probe)
