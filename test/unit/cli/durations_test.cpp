#include "durations.h"

#include <gtest/gtest.h>

#include <optional>

namespace dlock::cli {
namespace {

TEST(ShortDuration, OneUnit) {
  EXPECT_EQ(parse_short_duration("500ms"), Millis(500));
  EXPECT_EQ(parse_short_duration("30s"), Millis(30000));
  EXPECT_EQ(parse_short_duration("5m"), Millis(300000));
  EXPECT_EQ(parse_short_duration("1h"), Millis(3600000));
  EXPECT_EQ(parse_short_duration("2d"), Millis(172800000));
  EXPECT_EQ(parse_short_duration("0s"), Millis(0));
  EXPECT_EQ(parse_short_duration("007s"), Millis(7000));
}

TEST(ShortDuration, RunsOfUnitsLargestFirst) {
  EXPECT_EQ(parse_short_duration("1m30s"), Millis(90000));
  EXPECT_EQ(parse_short_duration("1d2h3m4s5ms"), Millis(93784005));
  EXPECT_EQ(parse_short_duration("1h500ms"), Millis(3600500));
}

TEST(ShortDuration, OtherTextIsLeftToTheServer) {
  for (const char* text : {"", "s", "30", "30 s", " 30s", "30s ", "1.5s", "-5s",
                           "+5s", "30S", "30sec", "90 seconds", "00:01:30",
                           "30s1m", "1m1m", "5ms3s", "1m 30s", "1x", "1mss"}) {
    EXPECT_EQ(parse_short_duration(text), std::nullopt) << text;
  }
}

TEST(ShortDuration, TooLargeIsLeftToTheServer) {
  EXPECT_EQ(parse_short_duration("9223372036854775807ms"),
            Millis(9223372036854775807));
  EXPECT_EQ(parse_short_duration("9223372036854775808ms"), std::nullopt);
  EXPECT_EQ(parse_short_duration("106751991167301d"), std::nullopt);
  EXPECT_EQ(parse_short_duration("9223372036854775s807ms"),
            Millis(9223372036854775807));
  EXPECT_EQ(parse_short_duration("9223372036854775s808ms"), std::nullopt);
}

TEST(DurationFromText, KeepsTheTextAndReadsShortForms) {
  Duration d = duration_from_text("1m30s");
  EXPECT_EQ(d.text, "1m30s");
  EXPECT_EQ(d.millis, Millis(90000));
  Duration later = duration_from_text("90 seconds");
  EXPECT_EQ(later.text, "90 seconds");
  EXPECT_EQ(later.millis, std::nullopt);
}

TEST(SecondsText, ThreeDecimals) {
  EXPECT_EQ(seconds_text(Millis(29998)), "29.998");
  EXPECT_EQ(seconds_text(Millis(30000)), "30.000");
  EXPECT_EQ(seconds_text(Millis(5)), "0.005");
  EXPECT_EQ(seconds_text(Millis(0)), "0.000");
  EXPECT_EQ(seconds_text(Millis(-1500)), "-1.500");
}

}  // namespace
}  // namespace dlock::cli
