# Script-driven tests of what the C++ tests cannot see: the `simkit` command line as a program
# (exit statuses, one-line errors, files left behind, the digits acceptance run) and the
# installed package as an outside project uses it. Included from tests/CMakeLists.txt.

find_program(SIMKIT_BASH bash REQUIRED)
set(SIMKIT_CLI_TEST_WORK ${CMAKE_CURRENT_BINARY_DIR}/cli-work)

add_test(NAME cli_contract
         COMMAND ${SIMKIT_BASH} ${CMAKE_CURRENT_LIST_DIR}/contract.sh $<TARGET_FILE:simkit_cli>
                 ${SIMKIT_CLI_TEST_WORK}/contract)
set_tests_properties(cli_contract PROPERTIES LABELS cpu TIMEOUT 300)

add_test(NAME cli_gauss_contract
         COMMAND ${SIMKIT_BASH} ${CMAKE_CURRENT_LIST_DIR}/gauss_contract.sh $<TARGET_FILE:simkit_cli>
                 ${SIMKIT_CLI_TEST_WORK}/gauss_contract)
set_tests_properties(cli_gauss_contract PROPERTIES LABELS cpu TIMEOUT 120)

add_test(NAME cli_primitives_contract
         COMMAND ${SIMKIT_BASH} ${CMAKE_CURRENT_LIST_DIR}/primitives_contract.sh $<TARGET_FILE:simkit_cli>
                 ${SIMKIT_CLI_TEST_WORK}/primitives_contract)
set_tests_properties(cli_primitives_contract PROPERTIES LABELS cpu TIMEOUT 120)

add_test(NAME cli_digits_cpu
         COMMAND ${SIMKIT_BASH} ${CMAKE_CURRENT_LIST_DIR}/digits.sh $<TARGET_FILE:simkit_cli> ${SIMKIT_TEST_DATA_DIR}
                 ${SIMKIT_CLI_TEST_WORK}/digits_cpu cpu)
set_tests_properties(cli_digits_cpu PROPERTIES LABELS cpu TIMEOUT 300)

add_test(NAME cli_digits_gpu
         COMMAND ${SIMKIT_BASH} ${CMAKE_CURRENT_LIST_DIR}/digits.sh $<TARGET_FILE:simkit_cli> ${SIMKIT_TEST_DATA_DIR}
                 ${SIMKIT_CLI_TEST_WORK}/digits_gpu gpu)
set_tests_properties(cli_digits_gpu PROPERTIES LABELS gpu TIMEOUT 300 SKIP_RETURN_CODE 77)

add_test(NAME install_consumer
         COMMAND ${SIMKIT_BASH} ${CMAKE_CURRENT_LIST_DIR}/consumer.sh ${CMAKE_COMMAND} ${PROJECT_BINARY_DIR}
                 ${PROJECT_SOURCE_DIR}/tests/consumer ${SIMKIT_CLI_TEST_WORK}/consumer ${CMAKE_CXX_COMPILER}
                 $<CONFIG>)
set_tests_properties(install_consumer PROPERTIES LABELS cpu TIMEOUT 600)

add_test(NAME cli_index_contract
         COMMAND ${SIMKIT_BASH} ${CMAKE_CURRENT_LIST_DIR}/index_contract.sh $<TARGET_FILE:simkit_cli>
                 ${SIMKIT_CLI_TEST_WORK}/index_contract)
set_tests_properties(cli_index_contract PROPERTIES LABELS cpu TIMEOUT 120)

# `mpirun -n 1/2/3 simkit knn` byte-identical to one process (every metric, awkward slices, the
# digits set's exact ties); skipped (77) without mpirun or a build without MPI.
add_test(NAME cli_mpi_knn
         COMMAND ${SIMKIT_BASH} ${CMAKE_CURRENT_LIST_DIR}/mpi_knn.sh $<TARGET_FILE:simkit_cli> ${SIMKIT_TEST_DATA_DIR}
                 ${SIMKIT_CLI_TEST_WORK}/mpi_knn)
set_tests_properties(cli_mpi_knn PROPERTIES LABELS cpu TIMEOUT 240 SKIP_RETURN_CODE 77)

# `mpirun -n 1/2/3 simkit gauss` within 1e-12 relative of one process (direct; ifgt within its
# bound) and `simkit kmeans` byte-identical (both metrics, both inits, --sample, re-seeds);
# skipped (77) without mpirun, python3 or a build without MPI.
add_test(NAME cli_mpi_gauss_kmeans
         COMMAND ${SIMKIT_BASH} ${CMAKE_CURRENT_LIST_DIR}/mpi_gauss_kmeans.sh $<TARGET_FILE:simkit_cli>
                 ${SIMKIT_CLI_TEST_WORK}/mpi_gauss_kmeans)
set_tests_properties(cli_mpi_gauss_kmeans PROPERTIES LABELS cpu TIMEOUT 120 SKIP_RETURN_CODE 77)

# `mpirun -n P simkit index build` + `index search` byte-identical to one process (flat, ivf_flat,
# ivf_pq with and without a re-rank, several metrics and nprobes, awkward slices, the digits set's
# ties) and the sharded index's refusals; skipped (77) without mpirun or a build without MPI.
add_test(NAME cli_mpi_index
         COMMAND ${SIMKIT_BASH} ${CMAKE_CURRENT_LIST_DIR}/mpi_index.sh $<TARGET_FILE:simkit_cli> ${SIMKIT_TEST_DATA_DIR}
                 ${SIMKIT_CLI_TEST_WORK}/mpi_index)
set_tests_properties(cli_mpi_index PROPERTIES LABELS cpu TIMEOUT 240 SKIP_RETURN_CODE 77
                     ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMP_NUM_THREADS=1")

# The same two on GPUs: each rank on its host's GPU (local rank mod the GPUs), one process on GPU
# 0, byte-identical; skipped (77) without a GPU, mpirun or MPI.
add_test(NAME cli_mpi_knn_gpu
         COMMAND ${SIMKIT_BASH} ${CMAKE_CURRENT_LIST_DIR}/mpi_knn.sh $<TARGET_FILE:simkit_cli> ${SIMKIT_TEST_DATA_DIR}
                 ${SIMKIT_CLI_TEST_WORK}/mpi_knn_gpu gpu)
set_tests_properties(cli_mpi_knn_gpu PROPERTIES LABELS gpu TIMEOUT 300 SKIP_RETURN_CODE 77)
add_test(NAME cli_mpi_index_gpu
         COMMAND ${SIMKIT_BASH} ${CMAKE_CURRENT_LIST_DIR}/mpi_index.sh $<TARGET_FILE:simkit_cli> ${SIMKIT_TEST_DATA_DIR}
                 ${SIMKIT_CLI_TEST_WORK}/mpi_index_gpu gpu)
set_tests_properties(cli_mpi_index_gpu PROPERTIES LABELS gpu TIMEOUT 400 SKIP_RETURN_CODE 77
                     ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMP_NUM_THREADS=1")
