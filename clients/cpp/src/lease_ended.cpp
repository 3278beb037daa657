#include <dlock/lease_ended.h>

#include <nlohmann/json.hpp>

namespace dlock::client {

std::string LeaseEnded::describe() const {
  if (reason == "force-released") {
    return "force-released by " + by + (detail.empty() ? "" : ": " + detail);
  }
  if (reason == "taken-over") {
    return "taken over after expiry" +
           (new_token ? " by token " + std::to_string(*new_token) : "");
  }
  if (reason == "released-all") return "released by release_all as " + by;
  return reason + " by " + by;
}

std::optional<LeaseEnded> parse_lease_ended(const std::string& payload) {
  nlohmann::json j = nlohmann::json::parse(payload, nullptr, false);
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string() ||
      !j.contains("token") || !j["token"].is_number_integer()) {
    return std::nullopt;
  }
  auto text = [&j](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>()
                                            : std::string();
  };
  LeaseEnded e;
  e.name = j["name"].get<std::string>();
  e.token = j["token"].get<std::int64_t>();
  e.reason = text("reason");
  e.by = text("by");
  e.detail = text("detail");
  auto n = j.find("new_token");
  if (n != j.end() && n->is_number_integer())
    e.new_token = n->get<std::int64_t>();
  return e;
}

}  // namespace dlock::client
