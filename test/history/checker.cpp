#include "checker.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dlock::history {
namespace {

// Ops are referred to by their position in the history: a million of them
// are checked without a copy.
using Index = std::vector<std::size_t>;

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

bool acknowledged(const Op& op) {
  return op.call == Call::grant && op.outcome == Outcome::ok && op.token != 0;
}

// A grant that excludes every other hold of its name.
bool exclusive(const Op& op) { return !op.shared && op.permits == 0; }

bool accepted(const Op& op) {
  return op.call == Call::write && op.outcome == Outcome::ok;
}

std::string quoted(const std::string& name) { return "\"" + name + "\""; }

std::string row(const Op& op) {
  return "value " + op.value + ", fence " + std::to_string(op.token);
}

// One hold (checker.h): the grants of one name, owner and token.
struct Hold {
  std::size_t grant = kNone;      // its grant invoked first
  std::size_t expiry_op = kNone;  // the grant or renewal its expiry is from
  std::int64_t start = 0;         // acquired_at
  std::int64_t expiry = 0;
  std::int64_t released = kNever;  // by a release of its token
  // By a renewal or a grant asking again with an unknown outcome, which
  // may have set its expiry earlier (invoked_us + ttl at the earliest).
  std::int64_t shortened = kNever;
  std::int64_t end = 0;  // the earliest of them all
  Index acks;  // its acknowledged grants and renewals, in history order
  // Its acknowledged release answered first, if any.
  std::size_t release_op = kNone;
};

class Checker {
 public:
  Checker(const std::vector<Op>& history, Expect expect)
      : h_(history), expect_(expect) {}

  Verdict run() {
    // Each name's ops in history order, hashed rather than sorted: a
    // million ops share a few names.
    std::unordered_map<std::string_view, Index> by_name;
    Index grants;
    for (std::size_t i = 0; i < h_.size(); ++i) {
      const Op& op = h_[i];
      by_name[op.name].push_back(i);
      if (acknowledged(op)) {
        grants.push_back(i);
        ++v_.figures.grants;
      }
      if (accepted(op)) ++v_.figures.writes;
      if (op.outcome == Outcome::unknown) ++v_.figures.unknown;
    }
    std::vector<const std::pair<const std::string_view, Index>*> names;
    for (auto& entry : by_name) names.push_back(&entry);
    std::sort(names.begin(), names.end(),
              [](const auto* a, const auto* b) { return a->first < b->first; });
    for (auto* name : names) {
      check_holds(name->second);
      check_writes(name->second);
      check_final_rows(name->second);
    }
    check_tokens(grants);
    if (expect_.fault_free) check_answers();
    if (expect_.cycles) check_cycles();
    v_.figures.ops = static_cast<std::int64_t>(h_.size());
    v_.figures.names = static_cast<std::int64_t>(names.size());
    return std::move(v_);
  }

 private:
  void add(const char* rule, std::string what, const Index& ops) {
    ++v_.figures.violations;
    if (v_.violations.size() == kKeptViolations) return;
    Violation v{rule, std::move(what), {}};
    for (std::size_t i : ops)
      if (i != kNone) v.ops.push_back(h_[i]);
    v_.violations.push_back(std::move(v));
  }

  // The expiry of the hold's last acknowledged grant or renewal, by the
  // client's clock at completion; of two completed at once, the earlier
  // expiry (the one that breaks fewer rules).
  void extend(Hold& hold, std::size_t i) const {
    const Op& op = h_[i];
    if (hold.expiry_op != kNone) {
      const Op& last = h_[hold.expiry_op];
      if (op.completed_us < last.completed_us) return;
      if (op.completed_us == last.completed_us && op.expires_us >= hold.expiry)
        return;
    }
    hold.expiry_op = i;
    hold.expiry = op.expires_us;
  }

  // Double grants: the holds of one name, laid end to end by start.
  void check_holds(const Index& ops) {
    std::vector<Hold> holds;
    std::unordered_map<std::int64_t, Index> by_token;  // token -> holds
    for (std::size_t i : ops) {
      const Op& op = h_[i];
      if (!acknowledged(op)) continue;
      Index& same = by_token[op.token];
      auto it = std::find_if(same.begin(), same.end(), [&](std::size_t k) {
        return h_[holds[k].grant].owner == op.owner;
      });
      if (it == same.end()) {
        same.push_back(holds.size());
        holds.push_back(
            Hold{i, kNone, op.acquired_us, 0, kNever, kNever, 0, {i}, kNone});
        extend(holds.back(), i);
        continue;
      }
      Hold& hold = holds[*it];
      hold.start = std::min(hold.start, op.acquired_us);
      if (op.invoked_us < h_[hold.grant].invoked_us) hold.grant = i;
      hold.acks.push_back(i);
      extend(hold, i);
    }
    if (holds.empty()) return;

    // Times after which no hold that started before them lasts, and when
    // force_releases with no answer were sent.
    std::vector<std::int64_t> forced;
    std::vector<std::int64_t> late;
    for (std::size_t i : ops) {
      const Op& op = h_[i];
      bool known = op.outcome == Outcome::ok;
      if (op.call == Call::force_release) {
        if (known) forced.push_back(op.server_us);
        if (op.outcome == Outcome::unknown) {
          forced.push_back(op.invoked_us);
          late.push_back(op.invoked_us);
        }
        continue;
      }
      if (op.call != Call::renew && op.call != Call::release) continue;
      if (!known &&
          !(op.call == Call::release && op.outcome == Outcome::unknown))
        continue;
      auto same = by_token.find(op.token);
      if (same == by_token.end()) continue;
      for (std::size_t k : same->second) {
        Hold& hold = holds[k];
        if (!op.owner.empty() && op.owner != h_[hold.grant].owner) continue;
        std::int64_t at = known ? op.server_us : op.invoked_us;
        if (op.call == Call::renew) {
          extend(hold, i);
          hold.acks.push_back(i);
        } else if (at > hold.start) {
          hold.released = std::min(hold.released, at);
          if (known && (hold.release_op == kNone ||
                        op.completed_us < h_[hold.release_op].completed_us))
            hold.release_op = i;
        }
      }
    }
    std::sort(forced.begin(), forced.end());

    // A renewal with an unknown outcome, or a grant with an unknown
    // outcome by a holder's owner (which renews the hold when it asks
    // again), invoked after the hold's last acknowledged grant or renewal
    // was: if it took effect, the hold may have ended ttl after it was
    // sent.
    std::unordered_map<std::string, Index> by_owner;  // owner -> holds
    for (std::size_t k = 0; k < holds.size(); ++k)
      by_owner[h_[holds[k].grant].owner].push_back(k);
    for (std::size_t i : ops) {
      const Op& op = h_[i];
      if (op.outcome != Outcome::unknown) continue;
      const Index* same = nullptr;
      if (op.call == Call::renew) {
        auto it = by_token.find(op.token);
        if (it != by_token.end()) same = &it->second;
      } else if (op.call == Call::grant) {
        auto it = by_owner.find(op.owner);
        if (it != by_owner.end()) same = &it->second;
      }
      if (!same) continue;
      for (std::size_t k : *same) {
        Hold& hold = holds[k];
        if (op.call == Call::grant && hold.start >= op.invoked_us) continue;
        if (h_[hold.expiry_op].invoked_us >= op.invoked_us) continue;
        hold.shortened =
            std::min(hold.shortened, op.invoked_us + op.ttl_ms * 1000);
      }
    }

    Index order(holds.size());
    for (std::size_t k = 0; k < holds.size(); ++k) {
      Hold& hold = holds[k];
      hold.end = std::min({hold.expiry, hold.released, hold.shortened});
      auto f = std::upper_bound(forced.begin(), forced.end(), hold.start);
      if (f != forced.end()) hold.end = std::min(hold.end, *f);
      hold.end = std::max(hold.end, hold.start);
      order[k] = k;
    }
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (holds[a].start != holds[b].start)
        return holds[a].start < holds[b].start;
      return holds[a].grant < holds[b].grant;
    });
    // A force_release with no answer may have reached the server late,
    // just after the first grant made after it was sent.
    for (std::int64_t sent : late) {
      auto first = std::lower_bound(
          order.begin(), order.end(), sent,
          [&](std::size_t k, std::int64_t t) { return holds[k].start < t; });
      if (first != order.end()) holds[*first].end = holds[*first].start;
    }

    bool modes = std::any_of(holds.begin(), holds.end(), [&](const Hold& x) {
      return !exclusive(h_[x.grant]);
    });
    if (modes) {
      check_modes(holds, order);
    } else {
      check_exclusive(holds, order);
    }
    check_token_order(holds);
    for (const Hold& hold : holds) {
      if (expect_.fault_free) check_regrants(hold);
      check_renewals(hold);
    }
    if (expect_.fault_free) check_within_holds(ops, holds, by_token);
  }

  // The renewal that made a hold last until its end, if one did.
  std::size_t lasting_renewal(const Hold& hold) const {
    return hold.end == hold.expiry && hold.expiry_op != hold.grant &&
                   h_[hold.expiry_op].call == Call::renew
               ? hold.expiry_op
               : kNone;
  }

  void double_grant(const Hold& before, const Hold& hold) {
    const Op& a = h_[before.grant];
    const Op& b = h_[hold.grant];
    add("double grant",
        quoted(a.name) + ": token " + std::to_string(a.token) + " (owner " +
            a.owner + ") held until " + std::to_string(before.end) +
            ", token " + std::to_string(b.token) + " (owner " + b.owner +
            ") granted from " + std::to_string(hold.start),
        {before.grant, lasting_renewal(before), hold.grant});
  }

  // Exclusive holds, laid end to end by start: each must begin no earlier
  // than every hold before it ended.
  void check_exclusive(const std::vector<Hold>& holds, const Index& order) {
    std::size_t reach = kNone;  // the hold that ends last so far
    for (std::size_t k : order) {
      const Hold& hold = holds[k];
      if (reach != kNone && hold.start < holds[reach].end)
        double_grant(holds[reach], hold);
      if (reach == kNone || hold.end > holds[reach].end) reach = k;
    }
  }

  // A name with shared grants or permits of a semaphore: at every instant
  // its holds are one exclusive hold, or shared ones only, or at most
  // `permits` holds of the semaphore. Each hold is checked against those
  // still running when it starts: a conflict with the first of them is a
  // double grant, one permit too many an over-permits violation.
  void check_modes(const std::vector<Hold>& holds, const Index& order) {
    Index running;  // in start order
    for (std::size_t k : order) {
      const Hold& hold = holds[k];
      running.erase(std::remove_if(running.begin(), running.end(),
                                   [&](std::size_t r) {
                                     return holds[r].end <= hold.start;
                                   }),
                    running.end());
      const Op& op = h_[hold.grant];
      Index permits;
      bool conflict = false;
      for (std::size_t r : running) {
        const Op& other = h_[holds[r].grant];
        if (op.permits > 0 && other.permits > 0) {
          permits.push_back(holds[r].grant);
        } else if (!(op.shared && other.shared) && !conflict) {
          double_grant(holds[r], hold);
          conflict = true;
        }
      }
      if (op.permits > 0 &&
          permits.size() >= static_cast<std::size_t>(op.permits)) {
        permits.push_back(hold.grant);
        add("over permits",
            quoted(op.name) + ": token " + std::to_string(op.token) +
                " granted from " + std::to_string(hold.start) + " while " +
                std::to_string(permits.size() - 1) + " of " +
                std::to_string(op.permits) + " permits were held",
            permits);
      }
      running.push_back(k);
    }
  }

  // Token order on the server's clock: of two holds of one name, the one
  // with the larger token does not start first. (Two that start at once
  // overlap: a double grant.) Shared holds are granted side by side, in
  // no order.
  void check_token_order(const std::vector<Hold>& holds) {
    Index order;
    for (std::size_t k = 0; k < holds.size(); ++k)
      if (!h_[holds[k].grant].shared) order.push_back(k);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const Op& x = h_[holds[a].grant];
      const Op& y = h_[holds[b].grant];
      if (x.token != y.token) return x.token < y.token;
      return holds[a].start < holds[b].start;
    });
    for (std::size_t n = 1; n < order.size(); ++n) {
      const Hold& before = holds[order[n - 1]];
      const Hold& hold = holds[order[n]];
      const Op& a = h_[before.grant];
      const Op& b = h_[hold.grant];
      if (a.token == b.token || hold.start >= before.start) continue;
      add("token order",
          quoted(b.name) + ": token " + std::to_string(b.token) +
              " granted from " + std::to_string(hold.start) +
              ", before token " + std::to_string(a.token) + " from " +
              std::to_string(before.start),
          {before.grant, hold.grant});
    }
  }

  // Runs without faults (Expect::fault_free): a hold ended by an
  // acknowledged release is not granted again, as a grant of its name,
  // owner and token sent after that release was answered. (A crash or a
  // failover may lose an acknowledged release, which commits without
  // waiting for the flush; then the owner asking again gets its hold
  // back.)
  void check_regrants(const Hold& hold) {
    if (hold.release_op == kNone) return;
    const Op& rel = h_[hold.release_op];
    for (std::size_t g : hold.acks) {
      const Op& op = h_[g];
      if (op.call != Call::grant || op.invoked_us <= rel.completed_us) continue;
      add("token regression",
          "token " + std::to_string(op.token) + " granted (" + quoted(op.name) +
              ", owner " + op.owner + ") again after its release",
          {hold.release_op, g});
    }
  }

  // An acknowledged renewal keeps its hold's acquired_at (when it reports
  // one), and one with a ttl no shorter than the call it follows (the
  // hold's acknowledged grant or renewal that completed last before it
  // was invoked) expires no earlier than that call did.
  void check_renewals(const Hold& hold) {
    for (std::size_t r : hold.acks) {
      const Op& op = h_[r];
      if (op.call != Call::renew) continue;
      if (op.acquired_us != 0 && op.acquired_us != hold.start)
        add("renewal",
            quoted(op.name) + ": the renewal of token " +
                std::to_string(op.token) + " changed acquired_at from " +
                std::to_string(hold.start) + " to " +
                std::to_string(op.acquired_us),
            {hold.grant, r});
      std::size_t last = kNone;
      for (std::size_t p : hold.acks)
        if (h_[p].completed_us < op.invoked_us &&
            (last == kNone || h_[p].completed_us > h_[last].completed_us))
          last = p;
      if (last == kNone || op.ttl_ms < h_[last].ttl_ms ||
          op.expires_us >= h_[last].expires_us)
        continue;
      add("renewal",
          quoted(op.name) + ": the renewal of token " +
              std::to_string(op.token) + " moved the expiry back from " +
              std::to_string(h_[last].expires_us) + " to " +
              std::to_string(op.expires_us),
          {last, r});
    }
  }

  // Runs without faults (Expect::fault_free): every accepted write of a
  // hold's token by its owner falls within the hold, and every
  // acknowledged release comes before its expiry.
  void check_within_holds(
      const Index& ops, const std::vector<Hold>& holds,
      const std::unordered_map<std::int64_t, Index>& by_token) {
    for (std::size_t i : ops) {
      const Op& op = h_[i];
      bool write = accepted(op);
      bool release = op.call == Call::release && op.outcome == Outcome::ok;
      if (!write && !release) continue;
      auto same = by_token.find(op.token);
      if (same == by_token.end()) continue;
      for (std::size_t k : same->second) {
        const Hold& hold = holds[k];
        if (op.owner != h_[hold.grant].owner) continue;
        if (write && (op.server_us < hold.start || op.server_us > hold.end))
          add("outside hold",
              quoted(op.name) + ": a write with token " +
                  std::to_string(op.token) + " at " +
                  std::to_string(op.server_us) + ", its hold " +
                  std::to_string(hold.start) + ".." + std::to_string(hold.end),
              {hold.grant, i});
        if (release && op.server_us >= hold.expiry)
          add("late release",
              quoted(op.name) + ": token " + std::to_string(op.token) +
                  " released at " + std::to_string(op.server_us) +
                  ", at or after its expiry " + std::to_string(hold.expiry),
              {hold.expiry_op, i});
      }
    }
  }

  // Accepted writes of one name with a smaller token than one accepted and
  // completed before they were invoked.
  void check_writes(const Index& ops) {
    Index done;
    for (std::size_t i : ops)
      if (accepted(h_[i])) done.push_back(i);
    Index sent = done;
    std::sort(done.begin(), done.end(), [this](std::size_t a, std::size_t b) {
      return h_[a].completed_us < h_[b].completed_us;
    });
    std::sort(sent.begin(), sent.end(), [this](std::size_t a, std::size_t b) {
      return h_[a].invoked_us < h_[b].invoked_us;
    });
    std::size_t next = 0;
    std::size_t highest = kNone;
    for (std::size_t i : sent) {
      const Op& op = h_[i];
      for (; next < done.size() && h_[done[next]].completed_us < op.invoked_us;
           ++next)
        if (highest == kNone || h_[done[next]].token > h_[highest].token)
          highest = done[next];
      if (highest != kNone && h_[highest].token > op.token)
        add("fencing",
            quoted(op.name) + ": a write with token " +
                std::to_string(op.token) + " accepted after one with token " +
                std::to_string(h_[highest].token) + " completed",
            {highest, i});
    }
  }

  // The final row against the writes that may have left it.
  void check_final_rows(const Index& ops) {
    std::int64_t largest = 0;
    bool any = false;
    std::size_t initial = kNone;
    for (std::size_t i : ops) {
      const Op& op = h_[i];
      if (accepted(op) && (!any || op.token > largest)) {
        largest = op.token;
        any = true;
      }
      if (op.call == Call::initial_row && op.outcome == Outcome::ok &&
          initial == kNone)
        initial = i;
    }
    // The accepted writes of the largest token that none of that token
    // was invoked after; `latest` the one of them completed last.
    std::int64_t last_sent = std::numeric_limits<std::int64_t>::min();
    for (std::size_t i : ops)
      if (accepted(h_[i]) && h_[i].token == largest)
        last_sent = std::max(last_sent, h_[i].invoked_us);
    auto last = [&](const Op& op) {
      return accepted(op) && op.token == largest &&
             op.completed_us >= last_sent;
    };
    std::size_t latest = kNone;
    for (std::size_t i : ops)
      if (last(h_[i]) &&
          (latest == kNone || h_[i].completed_us > h_[latest].completed_us))
        latest = i;

    for (std::size_t f : ops) {
      const Op& fin = h_[f];
      if (fin.call != Call::final_row || fin.outcome != Outcome::ok) continue;
      auto shows = [&](const Op& op) {
        return op.value == fin.value && op.token == fin.token;
      };
      bool fine = false;
      std::size_t match = kNone;
      for (std::size_t i : ops) {
        const Op& op = h_[i];
        if (op.call != Call::write || !shows(op)) continue;
        if (last(op) ||
            (op.outcome == Outcome::unknown && (!any || op.token >= largest)))
          fine = true;
        if (match == kNone) match = i;
      }
      if (!any && (initial == kNone || shows(h_[initial]))) fine = true;
      if (fine) continue;
      std::string what =
          quoted(fin.name) + ": the final row (" + row(fin) + ") is ";
      bool superseded = match != kNone && accepted(h_[match]);
      bool untouched = match == kNone && initial != kNone && shows(h_[initial]);
      if (any && (superseded || untouched)) {
        what += superseded ? "an accepted write superseded by"
                           : "still the initial row, not";
        add("lost write",
            what + " the accepted write with token " + std::to_string(largest),
            {f, superseded ? match : initial, latest});
        continue;
      }
      what += "none the writes may have left: ";
      what +=
          any ? "the last accepted write has token " + std::to_string(largest)
              : std::string("no write was accepted");
      add("final row", what, {f, match, any ? latest : initial});
    }
  }

  // When a grant took effect: its invocation, or, when the owner asked
  // again and was handed a hold that began earlier (its first answer may
  // have been lost, or granted before a failover), when that hold began.
  std::int64_t granted_from(std::size_t i) const {
    const Op& op = h_[i];
    return op.acquired_us > 0 ? std::min(op.invoked_us, op.acquired_us)
                              : op.invoked_us;
  }

  // Token regression across all names: a sweep of the grants in the order
  // they took effect, against the largest token of those completed before.
  void check_tokens(Index done) {
    Index sent = done;
    std::sort(done.begin(), done.end(), [this](std::size_t a, std::size_t b) {
      return h_[a].completed_us != h_[b].completed_us
                 ? h_[a].completed_us < h_[b].completed_us
                 : a < b;
    });
    std::sort(sent.begin(), sent.end(), [this](std::size_t a, std::size_t b) {
      return granted_from(a) != granted_from(b)
                 ? granted_from(a) < granted_from(b)
                 : a < b;
    });
    auto same_hold = [this](std::size_t a, std::size_t b) {
      return h_[a].name == h_[b].name && h_[a].owner == h_[b].owner &&
             h_[a].token == h_[b].token;
    };
    std::size_t next = 0;
    std::size_t highest = kNone;  // the first grant of the largest token
    std::size_t other = kNone;    // one of that token not its same hold
    for (std::size_t i : sent) {
      const Op& op = h_[i];
      for (;
           next < done.size() && h_[done[next]].completed_us < granted_from(i);
           ++next) {
        std::size_t d = done[next];
        if (highest == kNone || h_[d].token > h_[highest].token) {
          highest = d;
          other = kNone;
        } else if (h_[d].token == h_[highest].token && other == kNone &&
                   !same_hold(d, highest)) {
          other = d;
        }
      }
      if (highest == kNone || h_[highest].token < op.token) continue;
      std::size_t before = highest;
      if (h_[highest].token == op.token && same_hold(highest, i)) {
        if (other == kNone) continue;
        before = other;
      }
      const Op& b = h_[before];
      add("token regression",
          "token " + std::to_string(op.token) + " granted (" + quoted(op.name) +
              ", owner " + op.owner + ") after token " +
              std::to_string(b.token) + " was (" + quoted(b.name) + ", owner " +
              b.owner + ")",
          {before, i});
    }
  }

  // Runs without faults (Expect::fault_free): every call answered ok,
  // but for a grant's busy answer.
  void check_answers() {
    for (std::size_t i = 0; i < h_.size(); ++i) {
      const Op& op = h_[i];
      if (op.outcome == Outcome::ok ||
          (op.call == Call::grant && op.outcome == Outcome::busy))
        continue;
      std::string what = quoted(op.name) + ": " + to_string(op.call) + " " +
                         to_string(op.outcome);
      if (!op.sqlstate.empty()) what += " (" + op.sqlstate + ")";
      if (!op.note.empty()) what += ": " + op.note;
      add("call failed", what, {i});
    }
  }

  // Runs of cycles (Expect::cycles): each acknowledged grant is followed
  // by exactly one write, one renewal and one release with its token, of
  // its name and owner, and no such call has a token no grant handed out.
  void check_cycles() {
    std::map<std::int64_t, std::size_t> grant_of;  // token -> first grant
    std::map<std::int64_t, std::array<Index, 3>> calls;
    for (std::size_t i = 0; i < h_.size(); ++i) {
      const Op& op = h_[i];
      if (acknowledged(op)) grant_of.emplace(op.token, i);
      int part = op.call == Call::write     ? 0
                 : op.call == Call::renew   ? 1
                 : op.call == Call::release ? 2
                                            : -1;
      if (part >= 0) calls[op.token][part].push_back(i);
    }
    static const char* const kParts[] = {"writes", "renewals", "releases"};
    for (const auto& [token, parts] : calls) {
      if (grant_of.count(token) != 0) continue;
      Index shown;
      for (const Index& part : parts)
        shown.insert(shown.end(), part.begin(), part.end());
      add("cycle", "no grant of token " + std::to_string(token), shown);
    }
    for (const auto& [token, g] : grant_of) {
      const Op& grant = h_[g];
      auto found = calls.find(token);
      for (int part = 0; part < 3; ++part) {
        static const Index kNoCalls;
        const Index& these =
            found == calls.end() ? kNoCalls : found->second[part];
        if (these.size() != 1) {
          Index shown{g};
          shown.insert(shown.end(), these.begin(), these.end());
          add("cycle",
              quoted(grant.name) + ": " + std::to_string(these.size()) + " " +
                  kParts[part] + " of token " + std::to_string(token) +
                  ", expected 1",
              shown);
        }
        for (std::size_t i : these)
          if (h_[i].name != grant.name || h_[i].owner != grant.owner)
            add("cycle",
                quoted(h_[i].name) + ": " + to_string(h_[i].call) +
                    " with token " + std::to_string(token) + " by owner " +
                    h_[i].owner + ", granted for " + quoted(grant.name) +
                    " to owner " + grant.owner,
                {g, i});
      }
    }
  }

  const std::vector<Op>& h_;
  Expect expect_;
  Verdict v_;
};

}  // namespace

Verdict check(const std::vector<Op>& history, Expect expect) {
  return Checker(history, expect).run();
}

std::string report(const Verdict& v) {
  const Figures& f = v.figures;
  std::size_t n =
      std::max(static_cast<std::size_t>(f.violations), v.violations.size());
  std::string s = std::to_string(f.ops) + " ops, " + std::to_string(f.grants) +
                  " acknowledged grants, " + std::to_string(f.writes) +
                  " accepted writes, " + std::to_string(f.unknown) +
                  " unknown outcomes, " + std::to_string(f.names) + " names: ";
  s += n == 0 ? "no violation"
              : std::to_string(n) + " violation" + (n == 1 ? "" : "s");
  s += "\n";
  std::size_t shown = std::min(v.violations.size(), kReportedViolations);
  for (std::size_t k = 0; k < shown; ++k) {
    const Violation& x = v.violations[k];
    s += "\n" + x.rule + ": " + x.what + "\n";
    for (const Op& op : x.ops) s += "  " + describe(op) + "\n";
  }
  if (n > shown)
    s += "\n... and " + std::to_string(n - shown) + " more violations\n";
  return s;
}

}  // namespace dlock::history
