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
