// dlock acquire, renew, release and status: one call each, for scripts.
//
// acquire takes the lease as a new owner each time (client::default_owner()
// of this process), unless --owner names one: two acquires from one script
// never share an owner, so the second finds the lease busy. renew and
// release name the grant by NAME and TOKEN; they pass --owner to the
// server, which then checks it, or NULL, which it does not check.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "guarded.h"
#include <dlock/lease.h>
#include "lease_request.h"
#include "messages.h"
#include "server_durations.h"
#include "table.h"
#include "usage.h"

namespace dlock::cli {

namespace {

// The grant renew and release name: its owner "" (not checked) unless
// --owner gives one.
client::Grant named_grant(const std::string& name, std::int64_t token,
                          const std::optional<std::string>& owner) {
  client::Grant g;
  g.name = name;
  g.token = token;
  g.owner = owner.value_or("");
  return g;
}

// A text[] literal: every element quoted, " and \ escaped.
std::string text_array(const std::vector<std::string>& items) {
  std::string out = "{";
  for (const std::string& item : items) {
    if (out.size() > 1) out += ',';
    out += '"';
    for (char c : item) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

constexpr char kStatusSql[] =
    "SELECT name, state, owner, token,"
    "       (extract(epoch FROM valid_for) * 1000)::pg_catalog.int8,"
    "       (extract(epoch FROM held_for) * 1000)::pg_catalog.int8"
    "  FROM dlock.leases"
    " WHERE $1::pg_catalog.text[] IS NULL"
    "    OR name = ANY ($1::pg_catalog.text[])"
    " ORDER BY name";

}  // namespace

int acquire_command(AcquireOptions& o) {
  return guarded(kExitFailed, [&] {
    pq::Connection conn(o.lease.conninfo);
    if (auto error = read_durations(conn, duration_fields(o))) {
      return report_usage_error("acquire", *error);
    }
    client::Leases leases(conn);
    std::optional<client::Grant> grant = take_lease(
        leases, o.lease, o.lease.owner.value_or(client::default_owner()));
    if (!grant) return busy(o.lease);
    report_grant(o.lease, *grant);
    std::printf("%lld\n", static_cast<long long>(grant->token));
    return 0;
  });
}

int renew_command(RenewOptions& o) {
  return guarded(kExitFailed, [&] {
    pq::Connection conn(o.conninfo);
    if (auto error = read_durations(conn, duration_fields(o))) {
      return report_usage_error("renew", *error);
    }
    std::optional<Millis> ttl;
    if (o.ttl) ttl = o.ttl->millis.value();
    client::Grant renewed =
        client::Leases(conn).renew(named_grant(o.name, o.token, o.owner), ttl);
    std::printf("%s\n", seconds_text(renewed.valid_for).c_str());
    return 0;
  });
}

int release_command(ReleaseOptions& o) {
  return guarded(kExitFailed, [&] {
    pq::Connection conn(o.conninfo);
    if (client::Leases(conn).release(named_grant(o.name, o.token, o.owner))) {
      return 0;
    }
    say("lease " + o.name + " is not held with token " +
        std::to_string(o.token) + (o.owner ? " by owner " + *o.owner : ""));
    return kExitFailed;
  });
}

int status_command(const StatusOptions& o) {
  return guarded(kExitFailed, [&] {
    pq::Connection conn(o.conninfo);
    pq::Param names;
    if (!o.names.empty()) names = text_array(o.names);
    pq::Result r = conn.exec(kStatusSql, names);
    std::vector<std::vector<std::string>> rows;
    std::set<std::string> found;
    for (int i = 0; i < r.rows(); ++i) {
      found.insert(r.value(i, 0));
      std::vector<std::string> row;
      for (int c = 0; c < 4; ++c) row.push_back(r.value(i, c));
      for (int c = 4; c < 6; ++c) {
        row.push_back(r.isnull(i, c) ? ""
                                     : seconds_text(Millis(r.int64(i, c))));
      }
      rows.push_back(std::move(row));
    }
    Charset charset = locale_charset();
    std::fputs(format_table({{"name"},
                             {"state"},
                             {"owner"},
                             {"token", Align::right},
                             {"valid for", Align::right},
                             {"held for", Align::right}},
                            rows, charset)
                   .c_str(),
               stdout);
    int code = 0;
    for (const std::string& name : o.names) {
      if (!found.insert(name).second) continue;  // shown, or told already
      say("no lease " + escaped(name, charset));
      code = kExitFailed;
    }
    return code;
  });
}

}  // namespace dlock::cli
