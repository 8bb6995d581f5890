#include "record/unwind/shared_rows.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace aiflame::unwind {
namespace {

// A row that is a function of its key and generation, as the unwinder's are (a generation is one set
// of loaded objects), so that a reader can tell a row stored for another key or generation.
int32_t cfa_of(uint64_t key, uint32_t gen) { return static_cast<int32_t>((key * 0x2545f4914f6cdd1dULL + gen) >> 33); }
int32_t fp_of(uint64_t key, uint32_t gen) { return -static_cast<int32_t>((key ^ gen) & 0x7fffff) - 1; }

TEST(SharedRows, ARowIsFoundForItsKeyAndGenerationOnly) {
  const uint64_t key = 0x7f0012345678ull, exact = key | (uint64_t{1} << 63);
  shared_row_add(key, 7, -5, -16);
  int32_t cfa = 0, fp = 0;
  ASSERT_TRUE(shared_row_find(key, 7, &cfa, &fp));
  EXPECT_EQ(cfa, -5);
  EXPECT_EQ(fp, -16);
  EXPECT_FALSE(shared_row_find(key, 8, &cfa, &fp)) << "a row of another generation";
  EXPECT_FALSE(shared_row_find(exact, 7, &cfa, &fp)) << "the exact pc is another key";
  EXPECT_FALSE(shared_row_find(key + 1, 7, &cfa, &fp));
  shared_row_add(key, 8, 24, 0);  // the same pc in the next generation
  ASSERT_TRUE(shared_row_find(key, 8, &cfa, &fp));
  EXPECT_EQ(cfa, 24);
  EXPECT_EQ(fp, 0);
}

// Backed off the launch path (the collector's call; util/hot_pages_test.cpp tests the backing itself):
// the rows stored before it are still found.
TEST(SharedRows, BackingTheRegionKeepsItsRows) {
  // A key whose line starts a page: the backing writes to the first bytes of each page.
  uint64_t key = 0x7f00aaaa0000ull;
  while (shared_row_line(key) % (4096 / 64) != 0) key += 16;
  shared_row_add(key, 3, 40, -24);
  ASSERT_NE(shared_rows_region(), nullptr);
  shared_rows_back();
  shared_rows_back();  // once only: cheap again
  int32_t cfa = 0, fp = 0;
  ASSERT_TRUE(shared_row_find(key, 3, &cfa, &fp));
  EXPECT_EQ(cfa, 40);
  EXPECT_EQ(fp, -24);
}

std::vector<uint64_t> keys_of_one_line(size_t n) {
  std::vector<uint64_t> keys;
  const uint32_t line = shared_row_line(0x500000);
  for (uint64_t k = 0x500000; keys.size() < n; k += 16)
    if (shared_row_line(k) == line) keys.push_back(k);
  return keys;
}

bool found(uint64_t key, uint32_t gen) {
  int32_t cfa, fp;
  return shared_row_find(key, gen, &cfa, &fp) && cfa == cfa_of(key, gen) && fp == fp_of(key, gen);
}

// A line holds two rows: a third key of the generation takes the second slot (the first keeps the
// older row); a row of a new generation takes the first slot of an older one.
TEST(SharedRows, ALinesSlotsGoToTheNewestKeysAndGenerations) {
  const std::vector<uint64_t> k = keys_of_one_line(3);
  for (uint64_t key : k) ASSERT_FALSE(found(key, 1));
  shared_row_add(k[0], 1, cfa_of(k[0], 1), fp_of(k[0], 1));
  shared_row_add(k[1], 1, cfa_of(k[1], 1), fp_of(k[1], 1));
  EXPECT_TRUE(found(k[0], 1) && found(k[1], 1));
  shared_row_add(k[2], 1, cfa_of(k[2], 1), fp_of(k[2], 1));
  EXPECT_TRUE(found(k[0], 1));
  EXPECT_FALSE(found(k[1], 1));
  EXPECT_TRUE(found(k[2], 1));
  shared_row_add(k[1], 2, cfa_of(k[1], 2), fp_of(k[1], 2));
  EXPECT_TRUE(found(k[1], 2));
  EXPECT_FALSE(found(k[0], 1)) << "the first slot of the older generation was not the one taken";
  EXPECT_TRUE(found(k[2], 1));
}

// Slots taken over and over by writers of keys that share one line, in three generations, while readers
// look them up: every row a reader takes is its key's and generation's. (A race check, run under
// ThreadSanitizer too: on x86 a slot's fields share one cache line, so a torn read is too rare to
// provoke here even with the seqlock's checks removed; the seqlock's argument is in shared_rows.cpp.)
TEST(SharedRows, ReadersTakeOnlyTheRowOfTheirKeyAndGeneration) {
  const std::vector<uint64_t> keys = keys_of_one_line(6);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> hits{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; w++)
    threads.emplace_back([&, w] {
      for (uint64_t i = w; !stop; i++) {
        const uint64_t key = keys[i % keys.size()];
        const uint32_t gen = 1 + static_cast<uint32_t>(i / keys.size() % 3);
        shared_row_add(key, gen, cfa_of(key, gen), fp_of(key, gen));
      }
    });
  for (int r = 0; r < 2; r++)
    threads.emplace_back([&, r] {
      for (uint64_t i = r; !stop; i++) {
        const uint64_t key = keys[i % keys.size()];
        const uint32_t gen = 1 + static_cast<uint32_t>(i / 7 % 3);
        int32_t cfa, fp;
        if (!shared_row_find(key, gen, &cfa, &fp)) continue;
        hits++;
        if (cfa != cfa_of(key, gen) || fp != fp_of(key, gen)) wrong++;
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_GT(hits.load(), 1000u);
  EXPECT_EQ(wrong.load(), 0u) << "of " << hits.load() << " rows taken";
}

}  // namespace
}  // namespace aiflame::unwind
