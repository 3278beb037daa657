// dlock's settings (GUCs): dlock.max_ttl and dlock.log_grants.
#pragma once

#include "pg_headers.h"

namespace dlock::pg {

// Defines the settings; called once, from _PG_init().
void define_settings();

// dlock.max_ttl as a duration.
Micros max_ttl();

// dlock.log_grants: log grants, takeovers, releases and force-releases.
extern bool log_grants;

}  // namespace dlock::pg
