#include "history.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

namespace dlock::history {
namespace {

using nlohmann::json;

constexpr std::pair<Call, const char*> kCalls[] = {
    {Call::grant, "grant"},
    {Call::renew, "renew"},
    {Call::release, "release"},
    {Call::write, "write"},
    {Call::force_release, "force_release"},
    {Call::initial_row, "initial_row"},
    {Call::final_row, "final_row"},
};
constexpr std::pair<Outcome, const char*> kOutcomes[] = {
    {Outcome::ok, "ok"},           {Outcome::busy, "busy"},
    {Outcome::refused, "refused"}, {Outcome::failed, "failed"},
    {Outcome::unknown, "unknown"},
};

template <typename E, std::size_t N>
E parse(const std::pair<E, const char*> (&table)[N], const std::string& s) {
  for (const auto& [value, text] : table)
    if (s == text) return value;
  throw std::runtime_error("unknown value \"" + s + "\"");
}

json invoke_json(const Op& op) {
  return {{"type", "invoke"},    {"id", op.id},
          {"client", op.client}, {"call", to_string(op.call)},
          {"name", op.name},     {"owner", op.owner},
          {"token", op.token},   {"ttl_ms", op.ttl_ms},
          {"shared", op.shared}, {"permits", op.permits},
          {"value", op.value},   {"invoked_us", op.invoked_us}};
}

json complete_json(const Op& op) {
  return {{"type", "complete"},
          {"id", op.id},
          {"client", op.client},
          {"outcome", to_string(op.outcome)},
          {"token", op.token},
          {"completed_us", op.completed_us},
          {"acquired_us", op.acquired_us},
          {"expires_us", op.expires_us},
          {"server_us", op.server_us},
          {"value", op.value},
          {"sqlstate", op.sqlstate},
          {"note", op.note}};
}

void write_line(int fd, const json& j) {
  // Invalid UTF-8 in an error message must not lose the line.
  std::string line =
      j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw std::runtime_error(std::string("history: write: ") +
                               std::strerror(errno));
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

const char* to_string(Call c) {
  for (const auto& [value, text] : kCalls)
    if (value == c) return text;
  return "?";
}

const char* to_string(Outcome o) {
  for (const auto& [value, text] : kOutcomes)
    if (value == o) return text;
  return "?";
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Log::Log(const std::string& path, std::string client)
    : client_(std::move(client)) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error("history: cannot open " + path + ": " +
                             std::strerror(errno));
}

Log::~Log() {
  if (fd_ >= 0) ::close(fd_);
}

Op Log::invoke(Op op) {
  op.id = next_id_++;
  op.client = client_;
  op.invoked_us = now_us();
  write_line(fd_, invoke_json(op));
  return op;
}

void Log::complete(Op& op) {
  op.completed_us = now_us();
  write_line(fd_, complete_json(op));
}

void Log::record(Op op) {
  Op invoked = invoke(std::move(op));
  complete(invoked);
}

std::string invoke_line(const Op& op) { return invoke_json(op).dump(); }
std::string complete_line(const Op& op) { return complete_json(op).dump(); }

std::vector<Op> read_files(const std::vector<std::string>& paths) {
  std::vector<Op> ops;
  for (const std::string& path : paths) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("history: cannot read " + path);
    std::map<std::pair<std::string, std::int64_t>, std::size_t> open;
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (line.empty()) continue;
      try {
        json j = json::parse(line);
        auto key = std::make_pair(j.at("client").get<std::string>(),
                                  j.at("id").get<std::int64_t>());
        std::string type = j.at("type").get<std::string>();
        if (type == "invoke") {
          Op op;
          op.id = key.second;
          op.client = key.first;
          op.call = parse(kCalls, j.at("call").get<std::string>());
          op.outcome = Outcome::unknown;
          op.name = j.at("name").get<std::string>();
          op.owner = j.at("owner").get<std::string>();
          op.token = j.at("token").get<std::int64_t>();
          op.ttl_ms = j.at("ttl_ms").get<std::int64_t>();
          op.shared = j.value("shared", false);
          op.permits = j.value("permits", std::int64_t{0});
          op.value = j.at("value").get<std::string>();
          op.invoked_us = j.at("invoked_us").get<std::int64_t>();
          if (!open.emplace(key, ops.size()).second)
            throw std::runtime_error("a second invoke of one id");
          ops.push_back(std::move(op));
        } else if (type == "complete") {
          auto it = open.find(key);
          if (it == open.end())
            throw std::runtime_error("a completion without its invoke");
          Op& op = ops[it->second];
          open.erase(it);
          op.outcome = parse(kOutcomes, j.at("outcome").get<std::string>());
          op.token = j.at("token").get<std::int64_t>();
          op.completed_us = j.at("completed_us").get<std::int64_t>();
          op.acquired_us = j.at("acquired_us").get<std::int64_t>();
          op.expires_us = j.at("expires_us").get<std::int64_t>();
          op.server_us = j.at("server_us").get<std::int64_t>();
          op.value = j.at("value").get<std::string>();
          op.sqlstate = j.at("sqlstate").get<std::string>();
          op.note = j.at("note").get<std::string>();
        } else {
          throw std::runtime_error("unknown line type \"" + type + "\"");
        }
      } catch (const std::exception& e) {
        // A SIGKILLed client may leave a torn last line: that op stays
        // unknown, as if its line had never been written.
        if (in.peek() == std::char_traits<char>::eof() &&
            dynamic_cast<const json::parse_error*>(&e) != nullptr)
          break;
        throw std::runtime_error(path + ":" + std::to_string(number) + ": " +
                                 e.what());
      }
    }
  }
  return ops;
}

std::string describe(const Op& op) {
  std::string s = op.client + "#" + std::to_string(op.id) + " " +
                  to_string(op.call) + "(" + op.name;
  if (!op.owner.empty()) s += ", owner " + op.owner;
  if (op.token != 0) s += ", token " + std::to_string(op.token);
  if (op.ttl_ms != 0) s += ", ttl " + std::to_string(op.ttl_ms) + " ms";
  if (op.shared) s += ", shared";
  if (op.permits != 0) s += ", " + std::to_string(op.permits) + " permits";
  if (!op.value.empty()) s += ", value " + op.value;
  s += ") -> " + std::string(to_string(op.outcome));
  s += " [client " + std::to_string(op.invoked_us) + ".." +
       std::to_string(op.completed_us) + "]";
  if (op.acquired_us != 0 || op.expires_us != 0)
    s += " [server held " + std::to_string(op.acquired_us) + ".." +
         std::to_string(op.expires_us) + "]";
  if (op.server_us != 0)
    s += " [server at " + std::to_string(op.server_us) + "]";
  if (!op.sqlstate.empty()) s += " " + op.sqlstate;
  if (!op.note.empty()) s += " " + op.note;
  return s;
}

}  // namespace dlock::history
