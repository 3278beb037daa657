// The module's entry: PG_MODULE_MAGIC and _PG_init, which defines the
// settings and registers the transaction callback.
#include "durability.h"
#include "settings.h"

extern "C" {
PG_MODULE_MAGIC;
void _PG_init(void);
}

void _PG_init(void) {
  dlock::pg::define_settings();
  dlock::pg::register_durability_callback();
}
