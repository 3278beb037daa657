// The module's entry: PG_MODULE_MAGIC and _PG_init, which defines the
// settings, registers the transaction callback and, when dlock is in
// shared_preload_libraries, asks for the statistics' shared memory.
#include "../core/duration.h"
#include "../core/lease_stats.h"

#include "durability.h"
#include "settings.h"
#include "stats.h"

extern "C" {
PG_MODULE_MAGIC;
void _PG_init(void);
}

void _PG_init(void) {
  dlock::pg::define_settings();
  dlock::pg::register_durability_callback();
  if (process_shared_preload_libraries_in_progress) {
    dlock::pg::request_stats_memory();
  }
}
