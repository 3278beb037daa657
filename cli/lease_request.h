// A LeaseRequest (options.h) put to the server: what dlock run and dlock
// acquire share.
#pragma once

#include <optional>
#include <string>

#include <dlock/lease.h>
#include "options.h"

namespace dlock::cli {

// The grant's terms; durations must have been read (read_durations).
client::Terms terms_of(const LeaseRequest& r);

// try_acquire, or, with --wait, acquire (polling with --pooler). nullopt
// when the lease is busy. Throws pq::Error (client::lease_errors.h).
std::optional<client::Grant> take_lease(client::Leases& leases,
                                        const LeaseRequest& r,
                                        const std::string& owner);

// Says the lease is busy (unless --quiet) and returns the exit code for it.
int busy(const LeaseRequest& r);

// With --verbose: the grant, on stderr.
void report_grant(const LeaseRequest& r, const client::Grant& g);

}  // namespace dlock::cli
