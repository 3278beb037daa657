// Preloaded after the sanitizer runtime into the server by
// scripts/sanitize.sh. PostgreSQL is not instrumented, so the runtime starts
// on the first call it intercepts, and the first is a malloc() that
// libgpg-error's constructor makes inside bindtextdomain(), with glibc's
// gettext lock held for writing: the runtime's start-up asks dlerror() for a
// translated message, which takes that lock again, and the next
// bindtextdomain() (PostgreSQL's, in main) waits on it forever. This
// bindtextdomain() starts the runtime first, then calls glibc's.
#define _GNU_SOURCE
#include <dlfcn.h>

extern void __asan_init(void) __attribute__((weak));

typedef char* (*BindTextDomain)(const char*, const char*);

char* bindtextdomain(const char* domain, const char* directory) {
  if (__asan_init) __asan_init();
  BindTextDomain next = (BindTextDomain)dlsym(RTLD_NEXT, "bindtextdomain");
  return next(domain, directory);
}
