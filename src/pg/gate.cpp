#include "gate.h"

namespace dlock::pg {

namespace {

constexpr uint16 kGateKeySpace = 3;

}  // namespace

LOCKTAG lease_lock_tag(const char* name, uint16 key_space) {
  uint64 key = hash_bytes_extended(reinterpret_cast<const unsigned char*>(name),
                                   static_cast<int>(strlen(name)), 0);
  LOCKTAG tag;
  SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(key >> 32),
                       static_cast<uint32>(key), key_space);
  return tag;
}

LOCKTAG gate_tag(const char* name) {
  return lease_lock_tag(name, kGateKeySpace);
}

bool try_gate(const LOCKTAG& gate) {
  return LockAcquire(&gate, ExclusiveLock, false, true) !=
         LOCKACQUIRE_NOT_AVAIL;
}

void release_gate(const LOCKTAG& gate) {
  LockRelease(&gate, ExclusiveLock, false);
}

void wait_gate(const char* name) {
  LOCKTAG gate = gate_tag(name);
  (void)LockAcquire(&gate, ExclusiveLock, false, false);
}

void share_gate(const char* name) {
  LOCKTAG gate = gate_tag(name);
  (void)LockAcquire(&gate, ShareLock, false, false);
}

}  // namespace dlock::pg
