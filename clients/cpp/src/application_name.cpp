#include <dlock/application_name.h>

#include <algorithm>

namespace dlock::client {

namespace {

constexpr std::string_view kCut = "...";

// `text` in `room` bytes at most: whole, or its head ending in "...".
std::string fit(std::string_view text, std::size_t room) {
  if (text.size() <= room) return std::string(text);
  if (room < kCut.size()) return std::string(kCut.substr(0, room));
  std::size_t keep = room - kCut.size();
  // Back to the start of a UTF-8 character (not a continuation byte).
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) {
    --keep;
  }
  return std::string(text.substr(0, keep)) + std::string(kCut);
}

}  // namespace

std::string application_name(std::string_view what, std::string_view name,
                             std::string_view owner) {
  std::string prefix = std::string(what) + " ";
  std::size_t fixed = prefix.size() + 3;  // " (" and ")"
  std::size_t room =
      kApplicationNameMax > fixed ? kApplicationNameMax - fixed : 0;
  std::size_t name_room = name.size();
  std::size_t owner_room = owner.size();
  if (name.size() + owner.size() > room) {
    std::size_t half = room / 2;
    if (name.size() <= half) {
      owner_room = room - name.size();
    } else if (owner.size() <= room - half) {
      name_room = room - owner.size();
    } else {
      name_room = room - half;
      owner_room = half;
    }
  }
  return (prefix + fit(name, name_room) + " (" + fit(owner, owner_room) + ")")
      .substr(0, kApplicationNameMax);
}

}  // namespace dlock::client
