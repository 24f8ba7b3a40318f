// The tape's open-addressing id tables (autodiff/id_table.hpp) against std::unordered_map:
// random inserts, lookups and erases, through several growths, with ids that collide in the
// table (multiples of its size) as well as the sequential ids tensors get.
#include <catch2/catch.hpp>
#include <fusegrad/autodiff/id_table.hpp>

#include <algorithm>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {
fg::tensor_id draw(std::mt19937_64& rng, int kind) {
  switch (kind) {
    case 0: return 1 + rng() % 500;             // dense, like tensor ids
    case 1: return 1024 * (1 + rng() % 300);    // strided: long probe runs
    default: return 1 + rng() % 100000;         // sparse
  }
}
}  // namespace

TEST_CASE("id_map agrees with std::unordered_map under inserts, lookups and erases", "[id_table]") {
  const auto seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int kind = 0; kind < 3; ++kind) {
    fg::autodiff::id_map<long> t;
    std::unordered_map<fg::tensor_id, long> ref;
    for (int step = 0; step < 20000; ++step) {
      const fg::tensor_id id = draw(rng, kind);
      switch (rng() % 4) {
        case 0:
        case 1: {
          const long v = static_cast<long>(rng() % 1000);
          t[id] += v;
          ref[id] += v;
          break;
        }
        case 2:
          REQUIRE(t.erase(id) == (ref.erase(id) == 1));
          break;
        default: {
          const long* p = t.find(id);
          const auto it = ref.find(id);
          REQUIRE((p != nullptr) == (it != ref.end()));
          if (p) REQUIRE(*p == it->second);
        }
      }
      REQUIRE(t.size() == ref.size());
    }
    // Every surviving key is found with its value after all the shifting erases did.
    for (const auto& [k, v] : ref) {
      const long* p = t.find(k);
      REQUIRE(p != nullptr);
      REQUIRE(*p == v);
    }
    const fg::autodiff::id_map<long> copy = t;
    for (const auto& [k, v] : ref) REQUIRE(copy.contains(k));
    REQUIRE(copy.size() == ref.size());
  }
}

TEST_CASE("slot_map finds what was stored, across pages and page-cache collisions", "[id_table]") {
  fg::autodiff::slot_map m;
  using fg::autodiff::slot_map;
  REQUIRE(m.find(1) == slot_map::none);
  std::unordered_map<fg::tensor_id, std::uint32_t> ref;
  std::mt19937_64 rng(12345);
  std::uint32_t next = 0;
  // Runs of consecutive ids (as a thread hands them out), ids 16 pages apart (they share a
  // place in the cache of recent pages), and ids scattered over a wide range.
  std::vector<fg::tensor_id> ids;
  for (fg::tensor_id i = 1; i < 3000; ++i) ids.push_back(i);
  for (fg::tensor_id i = 0; i < 64; ++i) ids.push_back(100000 + i * 16 * 256 + 5);
  for (int i = 0; i < 2000; ++i) ids.push_back(1 + rng() % (fg::tensor_id{1} << 40));
  std::shuffle(ids.begin(), ids.end(), rng);
  for (fg::tensor_id id : ids) {
    std::uint32_t& s = m.at(id);
    const auto it = ref.find(id);
    if (it == ref.end()) {
      REQUIRE(s == slot_map::none);
      s = next;
      ref[id] = next++;
    } else {
      REQUIRE(s == it->second);
    }
    // Reading an old id between two new ones moves the cached pages around.
    const fg::tensor_id probe = ids[rng() % ids.size()];
    const auto p = ref.find(probe);
    REQUIRE(m.find(probe) == (p == ref.end() ? slot_map::none : p->second));
  }
  for (const auto& [id, s] : ref) REQUIRE(m.find(id) == s);
  REQUIRE(m.find(3000) == slot_map::none);  // on a page that exists, never stored
  m.clear();
  for (const auto& [id, s] : ref) REQUIRE(m.find(id) == slot_map::none);
  m.at(7) = 3;
  REQUIRE(m.find(7) == 3);
}
