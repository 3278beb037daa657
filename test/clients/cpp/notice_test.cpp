#include <gtest/gtest.h>

#include <dlock/pq.h>

namespace dlock::pq {
namespace {

// The WARNING PostgreSQL 15 sends when a commit's wait for the synchronous
// standbys is cancelled, as the server sends it with lc_messages = C.
Notice cancelled_wait() {
  return {"WARNING", "01000",
          "canceling wait for synchronous replication due to user request",
          "The transaction has already committed locally, but might not have "
          "been replicated to the standby.",
          "SyncRepWaitForLSN"};
}

TEST(NoticeCommitNotReplicated, TheCancelledWaitInEnglish) {
  EXPECT_TRUE(cancelled_wait().commit_not_replicated());
}

TEST(NoticeCommitNotReplicated, TranslatedTextsAreKnownByTheSourceFunction) {
  Notice n = cancelled_wait();
  // Any lc_messages: texts the English rule cannot know.
  n.message = "Warten abgebrochen";
  n.detail = "lokal festgeschrieben";
  EXPECT_TRUE(n.commit_not_replicated());
}

TEST(NoticeCommitNotReplicated, EnglishTextsWithoutTheSourceFunction) {
  Notice by_message = cancelled_wait();
  by_message.source_function = "";
  by_message.detail = "";
  EXPECT_TRUE(by_message.commit_not_replicated());
  Notice by_detail = cancelled_wait();
  by_detail.source_function = "SyncRepWaitForCommit";
  by_detail.message = "";
  EXPECT_TRUE(by_detail.commit_not_replicated());
}

TEST(NoticeCommitNotReplicated, OnlyAWarning) {
  Notice n = cancelled_wait();
  n.severity = "NOTICE";
  EXPECT_FALSE(n.commit_not_replicated());
  // The severity is the untranslated one: "WARNUNG" is never sent there.
  n.severity = "WARNUNG";
  EXPECT_FALSE(n.commit_not_replicated());
}

TEST(NoticeCommitNotReplicated, OtherWarningsAreNot) {
  EXPECT_FALSE(
      (Notice{"WARNING", "01000", "there is no transaction in progress", "",
              "EndTransactionBlock"})
          .commit_not_replicated());
  EXPECT_FALSE(
      (Notice{"WARNING", "01000", "canceling statement due to user request", "",
              "user_function"})
          .commit_not_replicated());
  EXPECT_FALSE(Notice{}.commit_not_replicated());
}

}  // namespace
}  // namespace dlock::pq
