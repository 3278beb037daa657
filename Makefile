# dlock: PostgreSQL extension, built with PGXS.
#   make                      build dlock.so
#   make install              install it into the server found by pg_config
#   make installcheck         pg_regress + isolation suites against a running server
#   make DLOCK_TESTING=1      also build the test-only boundary functions
#   make SANITIZE=address,undefined
#                             build with those sanitizers (scripts/sanitize.sh)
#   make dist                 dlock-VERSION.zip for PGXN, from the committed tree
#   make print-version        the version (dlock.control's default_version)
EXTENSION = dlock
MODULE_big = dlock
DATA = $(wildcard extension/dlock--*.sql)

# Every .cpp under src/ is part of the module: no list to keep in step.
OBJS = $(patsubst %.cpp,%.o,$(sort $(wildcard src/core/*.cpp src/pg/*.cpp)))

PG_CXXFLAGS = -std=c++17 -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-register
ifdef DLOCK_TESTING
PG_CPPFLAGS += -DDLOCK_TESTING
endif
# WERROR=1 turns warnings into errors (the test command builds this way).
ifdef WERROR
PG_CXXFLAGS += -Werror
endif
SHLIB_LINK = -lstdc++
# SANITIZE=address,undefined instruments dlock's code; the library then needs
# the sanitizer runtime preloaded into the server (scripts/sanitize.sh does).
# Undefined behaviour stops the backend instead of being reported and passed.
ifdef SANITIZE
PG_CXXFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SHLIB_LINK += -fsanitize=$(SANITIZE)
endif

# Each suite starts from a fresh dlock (sql/setup/fresh_dlock.sql), so any
# one runs alone: make installcheck REGRESS=fencing
REGRESS = lease_api lease_terms lease_errors lease_isolation_levels lease_state shared_leases semaphores multi_leases fencing advisory admin lease_ended roles security lease_rows upgrade stats
ifdef DLOCK_TESTING
REGRESS += boundary
endif
ISOLATION = try_acquire_race takeover uncommitted_grant acquire_wait acquire_queue repeatable_read fenced_update assert_held fence_race advisory_waits lease_admin row_changed reinstall epoch_switch protect_locks lease_ended shared_leases semaphore_waits multi_leases
ISOLATION_OPTS = --inputdir=test/isolation

# The version's one home is dlock.control's default_version; META.json and
# debian/changelog must say the same (make dist and debian/rules check).
DLOCK_VERSION := $(shell sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" dlock.control)
DIST = dlock-$(DLOCK_VERSION)

# Before the include: PGXS's clean rule reads it there.
EXTRA_CLEAN = .build-flags $(DIST).zip

# PGXS would also compile every .cpp to LLVM bitcode with clang, dropping
# -std=c++17; dlock has nothing to gain from JIT inlining.
override with_llvm := no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Rebuild everything when a header or a build switch changes, or the
# PostgreSQL built against (another major's headers and ABI: VERSION is
# PGXS's): they are recorded in .build-flags, rewritten only when they differ.
BUILD_FLAGS := DLOCK_TESTING=$(DLOCK_TESTING) WERROR=$(WERROR) SANITIZE=$(SANITIZE) PG=$(VERSION)
.build-flags: FORCE
	@echo '$(BUILD_FLAGS)' | cmp -s - $@ || echo '$(BUILD_FLAGS)' > $@
FORCE:
.PHONY: FORCE
$(OBJS): $(wildcard src/core/*.h src/pg/*.h) .build-flags

# For debian/rules and the tests: the version, from its one home.
print-version:
	@echo '$(DLOCK_VERSION)'

# The PGXN distribution: the committed tree (git archive, so no build
# artefact gets in) under one directory dlock-VERSION/, its META.json checked
# against the PGXN Meta Spec and dlock.control's version.
dist:
	@git diff --quiet HEAD -- dlock.control META.json || { \
	  echo 'make dist: commit dlock.control and META.json first: the zip holds the committed tree' >&2; exit 1; }
	@rm -rf $(DIST).zip $(DIST).check
	git archive --format=zip --prefix=$(DIST)/ -o $(DIST).zip HEAD
	@python3 -m zipfile -e $(DIST).zip $(DIST).check && \
	  python3 scripts/check-meta.py META.json '$(DLOCK_VERSION)' $(DIST).check/$(DIST); \
	  rc=$$?; rm -rf $(DIST).check; [ $$rc = 0 ] || { rm -f $(DIST).zip; exit 1; }
.PHONY: dist print-version
