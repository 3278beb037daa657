# dlock: PostgreSQL extension, built with PGXS.
#   make                      build dlock.so
#   make install              install it into the server found by pg_config
#   make installcheck         pg_regress + isolation suites against a running server
#   make DLOCK_TESTING=1      also build the test-only boundary functions
EXTENSION = dlock
MODULE_big = dlock
DATA = $(wildcard extension/dlock--*.sql)

OBJS = \
	src/core/advisory.o \
	src/core/errors.o \
	src/core/lease_rules.o \
	src/core/backoff.o \
	src/core/fencing.o \
	src/pg/advisory.o \
	src/pg/args.o \
	src/pg/boundary.o \
	src/pg/fencing.o \
	src/pg/module.o \
	src/pg/lease.o \
	src/pg/lease_store.o \
	src/pg/testing.o

PG_CXXFLAGS = -std=c++17 -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-register
ifdef DLOCK_TESTING
PG_CPPFLAGS += -DDLOCK_TESTING
endif
SHLIB_LINK = -lstdc++

REGRESS = boundary lease_api lease_errors lease_isolation_levels fencing advisory admin roles security lease_rows upgrade
ISOLATION = try_acquire_race takeover uncommitted_grant acquire_wait repeatable_read fenced_update assert_held fence_race advisory_waits lease_admin row_changed reinstall
ISOLATION_OPTS = --inputdir=test/isolation

# PGXS would also compile every .cpp to LLVM bitcode with clang, dropping
# -std=c++17; dlock has nothing to gain from JIT inlining.
override with_llvm := no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Rebuild everything when the testing switch changes.
$(OBJS): $(wildcard src/core/*.h src/pg/*.h)
