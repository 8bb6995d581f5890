// PyNameCache: Python frames named once, while their code object is the one named.
#include "record/py_name_cache.h"

#include <gtest/gtest.h>

namespace aiflame {
namespace {

int dummy[4];
const void* const kCode = &dummy[0];

TEST(PyNameCache, KeepsANameByCodeObjectAndInstruction) {
  PyNameCache c;
  const CodeIdentity id{&dummy[1], &dummy[2], 10};
  c.put(kCode, 40, id, PyFrame{1, 2, 12});
  const PyFrame* p = c.find(kCode, 40, id);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, (PyFrame{1, 2, 12}));
  EXPECT_EQ(c.find(kCode, 42, id), nullptr) << "another instruction of the code object: another line maybe";
  EXPECT_EQ(c.find(&dummy[3], 40, id), nullptr);
}

// A code object freed and another made at its address: its file, name or first line differ.
TEST(PyNameCache, AnotherCodeObjectAtTheSameAddressIsNamedAgain) {
  PyNameCache c;
  const CodeIdentity id{&dummy[1], &dummy[2], 10};
  c.put(kCode, 40, id, PyFrame{1, 2, 12});
  EXPECT_EQ(c.find(kCode, 40, CodeIdentity{&dummy[3], &dummy[2], 10}), nullptr) << "another file";
  EXPECT_EQ(c.find(kCode, 40, CodeIdentity{&dummy[1], &dummy[3], 10}), nullptr) << "another name";
  EXPECT_EQ(c.find(kCode, 40, CodeIdentity{&dummy[1], &dummy[2], 11}), nullptr) << "another first line";
  c.put(kCode, 40, CodeIdentity{&dummy[1], &dummy[3], 30}, PyFrame{1, 5, 33});
  EXPECT_EQ(*c.find(kCode, 40, CodeIdentity{&dummy[1], &dummy[3], 30}), (PyFrame{1, 5, 33}));
  EXPECT_EQ(c.find(kCode, 40, id), nullptr) << "the old code object's entry is replaced";
}

TEST(PyNameCache, ClearedWhenFull) {
  PyNameCache c;
  const CodeIdentity id{&dummy[1], &dummy[2], 10};
  for (size_t i = 0; i < PyNameCache::kMaxEntries; i++) c.put(kCode, static_cast<int32_t>(i), id, PyFrame{1, 2, 3});
  EXPECT_EQ(c.size(), PyNameCache::kMaxEntries);
  c.put(kCode, -1, id, PyFrame{1, 2, 3});
  EXPECT_EQ(c.size(), 1u);
}

}  // namespace
}  // namespace aiflame
