# find_package(dlock_client): the target dlock::client, dlock's C++ client
# library, with its dependencies (libpq, threads).
include(CMakeFindDependencyMacro)
find_dependency(PostgreSQL)
find_dependency(Threads)
include("${CMAKE_CURRENT_LIST_DIR}/dlock_clientTargets.cmake")
