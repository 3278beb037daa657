#include "pooler_history.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace pooler_stress {

namespace {

const char* kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::grant:
      return "grant";
    case OpKind::write:
      return "write";
    case OpKind::renew:
      return "renew";
    case OpKind::release:
      return "release";
  }
  return "?";
}

// Microseconds since the epoch as seconds, e.g. 1700000000.000250.
std::string instant(std::int64_t us) {
  char text[40];
  std::snprintf(text, sizeof text, "%lld.%06lld",
                static_cast<long long>(us / 1'000'000),
                static_cast<long long>(us % 1'000'000));
  return text;
}

// One grant and the calls its client made with its token.
struct Cycle {
  const Op* grant = nullptr;
  std::vector<const Op*> writes;
  std::vector<const Op*> renews;
  std::vector<const Op*> releases;
  // Set by check_cycle: the latest expiry, and the release that ended the
  // hold (one that returned true), if any.
  std::int64_t expires_us = 0;
  const Op* ended_by = nullptr;
};

class Checker {
 public:
  std::vector<Violation> violations;

  void flag(std::string what, std::vector<const Op*> ops) {
    Violation v;
    v.what = std::move(what);
    for (const Op* op : ops) {
      if (op) v.ops.push_back(*op);
    }
    violations.push_back(std::move(v));
  }

  // The calls of one grant, on their own.
  void check_cycle(Cycle& c) {
    const Op& g = *c.grant;
    const std::pair<const char*, const std::vector<const Op*>*> parts[] = {
        {"writes", &c.writes},
        {"renewals", &c.renews},
        {"releases", &c.releases}};
    for (const auto& [label, ops] : parts) {
      if (ops->size() != 1) {
        std::vector<const Op*> shown{&g};
        shown.insert(shown.end(), ops->begin(), ops->end());
        flag(std::to_string(ops->size()) + " " + label +
                 " of one grant, expected 1",
             shown);
      }
      for (const Op* op : *ops) {
        if (op->name != g.name || op->owner != g.owner) {
          flag("its token's grant has another name or owner", {&g, op});
        }
      }
    }

    c.expires_us = g.expires_us;
    for (const Op* r : c.renews) {
      if (!r->ok) continue;
      if (r->acquired_us != g.acquired_us) {
        flag("the renewal changed acquired_at", {&g, r});
      }
      if (r->expires_us < g.expires_us) {
        flag("the renewal moved the expiry back", {&g, r});
      }
      c.expires_us = std::max(c.expires_us, r->expires_us);
    }
    for (const Op* r : c.releases) {
      if (!r->ok) continue;
      if (r->clock_us >= c.expires_us) {
        flag("released at or after the hold's expiry", {&g, r});
      }
      c.ended_by = r;
    }
    for (const Op* w : c.writes) {
      if (!w->ok) continue;
      const std::int64_t end = c.ended_by ? c.ended_by->clock_us : c.expires_us;
      if (w->clock_us < g.acquired_us || w->clock_us > end) {
        flag("written outside its hold", {&g, w});
      }
    }
  }

  // The line of holds of one name, in token order.
  void check_line(const std::vector<const Cycle*>& line) {
    for (std::size_t i = 1; i < line.size(); ++i) {
      const Cycle& prev = *line[i - 1];
      const Cycle& cur = *line[i];
      if (cur.grant->acquired_us <= prev.grant->acquired_us) {
        flag("granted no later than the smaller token before it",
             {prev.grant, cur.grant});
      }
      // A hold whose release failed has no known end; that failure is
      // reported on its own.
      if (prev.ended_by && cur.grant->acquired_us < prev.ended_by->clock_us) {
        flag("granted before the hold before it ended",
             {prev.grant, prev.ended_by, cur.grant});
      }
    }
  }

  void check_row(const std::string& name, const Rows& before, const Rows& after,
                 const Op* last_write) {
    auto found = after.find(name);
    if (found == after.end()) {
      flag("the row of lease " + name + " is missing after the run",
           {last_write});
      return;
    }
    Row want;
    if (last_write) {
      want = {last_write->value, last_write->token};
    } else if (auto b = before.find(name); b != before.end()) {
      want = b->second;
    } else {
      return;  // never written and not known before: nothing to compare
    }
    const Row& got = found->second;
    if (!(got == want)) {
      flag("the row of lease " + name + " ends as '" + got.value + "' fenced " +
               std::to_string(got.fence) + ", not '" + want.value +
               "' fenced " + std::to_string(want.fence),
           {last_write});
    }
  }
};

}  // namespace

std::vector<Violation> check(const std::vector<Op>& history, const Rows& before,
                             const Rows& after) {
  Checker checker;
  std::map<std::int64_t, Cycle> cycles;  // by token
  for (const Op& op : history) {
    if (!op.ok) {
      checker.flag(std::string(kind_name(op.kind)) + " failed", {&op});
    }
    if (op.kind == OpKind::grant) {
      if (!op.ok) continue;
      Cycle& c = cycles[op.token];
      if (c.grant) {
        checker.flag("token granted twice", {c.grant, &op});
      } else {
        c.grant = &op;
      }
      continue;
    }
    Cycle& c = cycles[op.token];
    (op.kind == OpKind::write   ? c.writes
     : op.kind == OpKind::renew ? c.renews
                                : c.releases)
        .push_back(&op);
  }

  std::map<std::string, std::vector<const Cycle*>> lines;  // token order
  std::map<std::string, const Op*> last_write;
  for (auto& [token, c] : cycles) {
    if (!c.grant) {
      std::vector<const Op*> ops = c.writes;
      ops.insert(ops.end(), c.renews.begin(), c.renews.end());
      ops.insert(ops.end(), c.releases.begin(), c.releases.end());
      checker.flag("no grant of token " + std::to_string(token), ops);
      continue;
    }
    checker.check_cycle(c);
    lines[c.grant->name].push_back(&c);
    for (const Op* w : c.writes) {
      if (w->ok) last_write[w->name] = w;  // tokens ascend
    }
  }
  for (const auto& [name, line] : lines) checker.check_line(line);

  std::set<std::string> names;
  for (const auto& [name, row] : before) names.insert(name);
  for (const auto& [name, line] : lines) names.insert(name);
  for (const std::string& name : names) {
    auto w = last_write.find(name);
    checker.check_row(name, before, after,
                      w == last_write.end() ? nullptr : w->second);
  }
  return checker.violations;
}

Summary summarize(const std::vector<Op>& history) {
  Summary s;
  std::map<std::int64_t, std::int64_t> acquired;  // ok grants, by token
  for (const Op& op : history) {
    if (!op.ok) ++s.errors;
    if (op.backend_pid != 0) s.backends.insert(op.backend_pid);
    if (op.kind == OpKind::grant) {
      s.busy_polls += op.busy_polls;
      if (op.ok) {
        ++s.cycles;
        acquired[op.token] = op.acquired_us;
      }
    }
  }
  for (const Op& op : history) {
    if (op.kind != OpKind::release || !op.ok) continue;
    auto a = acquired.find(op.token);
    if (a != acquired.end()) {
      s.max_hold_us = std::max(s.max_hold_us, op.clock_us - a->second);
    }
  }
  return s;
}

std::string describe(const Op& op) {
  std::string out = op.owner + " " + kind_name(op.kind) + " " + op.name +
                    " token " + std::to_string(op.token);
  if (op.kind == OpKind::write) out += " '" + op.value + "'";
  if (op.acquired_us != 0) {
    out += " acquired " + instant(op.acquired_us) + " expires " +
           instant(op.expires_us);
  }
  if (op.clock_us != 0) out += " at " + instant(op.clock_us);
  if (op.backend_pid != 0) {
    out += " on backend " + std::to_string(op.backend_pid);
  }
  if (op.kind == OpKind::grant) {
    out += " after " + std::to_string(op.busy_polls) + " busy polls";
  }
  if (!op.ok) {
    out += ": not ok";
    if (!op.sqlstate.empty()) out += " (" + op.sqlstate + ")";
    if (!op.error.empty()) out += ": " + op.error;
  }
  return out;
}

}  // namespace pooler_stress
