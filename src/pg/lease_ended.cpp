#include "../core/duration.h"

#include "lease_ended.h"
#include "settings.h"

namespace dlock::pg {

namespace {

constexpr char kChannel[] = "dlock_lease_ended";

// Builds the payload with PostgreSQL's JSON escaping and queues it until
// commit (Async_Notify: a subtransaction's notifications go with it when
// it rolls back). The longest payload fits NOTIFY's 8000 bytes: a name of
// 255 bytes, a reason of 500 and a role name of 63, each byte escaped to
// at most six, come to under 5000.
void notify(const char* name, int64 token, const char* reason,
            const char* detail, const int64* new_token) {
  if (!notify_lease_ends) return;
  StringInfoData payload;
  initStringInfo(&payload);
  appendStringInfoString(&payload, "{\"name\": ");
  escape_json(&payload, name);
  appendStringInfo(&payload,
                   ", \"token\": " INT64_FORMAT ", \"reason\": ", token);
  escape_json(&payload, reason);
  appendStringInfoString(&payload, ", \"by\": ");
  escape_json(&payload, GetUserNameFromId(GetUserId(), false));
  appendStringInfoString(&payload, ", \"detail\": ");
  escape_json(&payload, detail);
  if (new_token) {
    appendStringInfo(&payload, ", \"new_token\": " INT64_FORMAT, *new_token);
  }
  appendStringInfoChar(&payload, '}');
  Async_Notify(kChannel, payload.data);
  pfree(payload.data);
}

}  // namespace

void notify_force_released(const char* name, int64 token, const char* reason) {
  notify(name, token, "force-released", reason, nullptr);
}

void notify_taken_over(const char* name, int64 token, int64 new_token) {
  notify(name, token, "taken-over", "", &new_token);
}

void notify_released_all(const char* name, int64 token) {
  notify(name, token, "released-all", "", nullptr);
}

}  // namespace dlock::pg
