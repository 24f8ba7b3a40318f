#pragma once
/// \file Hash tables keyed by tensor ids for the tape: open addressing with linear probing in
/// one flat array, so inserting an id allocates nothing (until the table grows) and a lookup
/// touches one or two cache lines. Note [id tables]: a tape inserts one id per recorded op and
/// looks up one per operand; node-based std::unordered_set made each insert a heap allocation.
/// Ids are never 0 (0 is the undefined tensor's), so 0 marks an empty slot; erasing shifts the
/// following run of slots back (no tombstones).

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>
#include <algorithm>
#include <array>

#include "../core/config.hpp"
#include "../core/host_allocator.hpp"

namespace fusegrad::autodiff {

/// Nonzero tensor ids, each with a V.
template <class V>
class id_table {
  struct slot {
    V value{};
    tensor_id key = 0;
  };

 public:
  id_table() = default;
  id_table(const id_table& o) { *this = o; }
  id_table& operator=(const id_table& o) {
    if (this == &o) return *this;
    clear();
    reserve(o.size_);
    for (std::size_t i = 0; i < o.capacity_; ++i)
      if (o.slots_[i].key) *insert_slot(o.slots_[i].key).first = o.slots_[i];
    return *this;
  }
  id_table(id_table&&) noexcept = default;
  id_table& operator=(id_table&&) noexcept = default;

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  bool contains(tensor_id id) const noexcept { return find_slot(id) != nullptr; }

  /// The value stored for id, or null.
  V* find(tensor_id id) noexcept {
    slot* s = find_slot(id);
    return s ? &s->value : nullptr;
  }
  const V* find(tensor_id id) const noexcept {
    const slot* s = find_slot(id);
    return s ? &s->value : nullptr;
  }
  /// The value for id, default-made when id is new.
  V& operator[](tensor_id id) { return insert_slot(id).first->value; }

  /// Removes id (and its value); false when it was not there.
  bool erase(tensor_id id) noexcept {
    slot* s = find_slot(id);
    if (!s) return false;
    const std::size_t mask = capacity_ - 1;
    std::size_t hole = static_cast<std::size_t>(s - slots_.get());
    for (std::size_t j = (hole + 1) & mask; slots_[j].key != 0; j = (j + 1) & mask) {
      // The slot at j may move into the hole unless its home lies cyclically in (hole, j].
      const std::size_t home = hash(slots_[j].key, mask);
      const bool stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
      if (!stays) {
        slots_[hole] = std::move(slots_[j]);
        hole = j;
      }
    }
    slots_[hole] = slot{};
    --size_;
    return true;
  }

  /// Makes room for n ids without growing.
  void reserve(std::size_t n) {
    std::size_t want = 16;
    while (want * 3 < n * 4 + 4) want *= 2;  // load factor below 3/4
    if (want > capacity_) rehash(want);
  }

  /// Removes every id and frees the table.
  void clear() noexcept {
    slots_.reset();
    capacity_ = 0;
    size_ = 0;
  }

 private:
  static std::size_t hash(tensor_id id, std::size_t mask) noexcept {
    // Fibonacci hashing spreads the sequential ids tensors get over the whole table.
    return static_cast<std::size_t>((id * 0x9E3779B97F4A7C15ull) >> 32) & mask;
  }
  slot* find_slot(tensor_id id) const noexcept {
    if (capacity_ == 0 || id == 0) return nullptr;
    const std::size_t mask = capacity_ - 1;
    for (std::size_t i = hash(id, mask);; i = (i + 1) & mask) {
      slot& s = slots_[i];
      if (s.key == id) return &s;
      if (s.key == 0) return nullptr;
    }
  }
  std::pair<slot*, bool> insert_slot(tensor_id id) {
    assert(id != 0 && "fusegrad: the undefined tensor's id 0 cannot be a key");
    if ((size_ + 1) * 4 > capacity_ * 3) rehash(capacity_ ? capacity_ * 2 : 16);
    const std::size_t mask = capacity_ - 1;
    for (std::size_t i = hash(id, mask);; i = (i + 1) & mask) {
      slot& s = slots_[i];
      if (s.key == id) return {&s, false};
      if (s.key == 0) {
        s.key = id;
        ++size_;
        return {&s, true};
      }
    }
  }
  /// Slot arrays come from host_allocate, so large tables are reused (Note [buffer cache]).
  struct slot_deleter {
    std::size_t n = 0;
    void operator()(slot* p) const noexcept {
      for (std::size_t i = 0; i < n; ++i) p[i].~slot();
      core::host_release(p, n * sizeof(slot));
    }
  };
  using slot_array = std::unique_ptr<slot[], slot_deleter>;
  static slot_array make_slots(std::size_t n) {
    static_assert(std::is_nothrow_default_constructible_v<slot>);
    slot* p = static_cast<slot*>(core::host_allocate(n * sizeof(slot)));
    for (std::size_t i = 0; i < n; ++i) new (p + i) slot{};  // slot{} cannot throw: ids and V's default
    return slot_array(p, slot_deleter{n});
  }

  void rehash(std::size_t cap) {
    slot_array old = std::move(slots_);
    const std::size_t old_cap = capacity_;
    slots_ = make_slots(cap);
    capacity_ = cap;
    size_ = 0;
    for (std::size_t i = 0; i < old_cap; ++i)
      if (old[i].key) *insert_slot(old[i].key).first = std::move(old[i]);
  }

  slot_array slots_;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
};

/// Note [slot pages]: a tape's map from tensor ids to its slots (Note [tape slots]). Threads
/// hand out ids in increasing order, in blocks, so the ids one tape sees cluster: the map is a
/// two-level array, pages of 256 slots for 256 consecutive ids, found through an id_table keyed
/// by id / 256, with the pages last used remembered in a small direct-mapped cache (an op
/// reads recent results and long-lived constants: a few pages at a time). Finding or adding
/// an id is then an index into an array, and growing never moves what is stored; a page costs
/// 1 KiB.
class slot_map {
 public:
  static constexpr std::uint32_t none = UINT32_MAX;

  /// id's slot, or none.
  std::uint32_t find(tensor_id id) const noexcept {
    const std::uint32_t* p = page_of(id >> page_bits);
    return p ? p[id & page_mask] : none;
  }
  /// Where id's slot is kept (none when id has none yet); adds id's page when missing.
  std::uint32_t& at(tensor_id id) {
    const tensor_id key = id >> page_bits;
    std::uint32_t* p = page_of(key);
    if (!p) p = add_page(key);
    return p[id & page_mask];
  }
  void clear() noexcept {
    pages_.clear();
    index_.clear();
    cache_.fill({});
  }

 private:
  static constexpr unsigned page_bits = 8;
  static constexpr tensor_id page_mask = (tensor_id{1} << page_bits) - 1;
  static constexpr tensor_id no_key = ~tensor_id{0};
  struct page_deleter {
    void operator()(std::uint32_t* p) const noexcept { core::host_release(p, page_bytes()); }
  };
  static constexpr std::size_t page_bytes() { return (std::size_t{1} << page_bits) * sizeof(std::uint32_t); }

  std::uint32_t* page_of(tensor_id key) const noexcept {
    cached& c = cache_[key % cache_size];
    if (c.key == key) return c.page;
    const std::uint32_t* i = index_.find(key + 1);  // id_table keys are nonzero
    if (!i) return nullptr;
    c = {key, pages_[*i].get()};
    return c.page;
  }
  std::uint32_t* add_page(tensor_id key) {
    std::unique_ptr<std::uint32_t, page_deleter> p(static_cast<std::uint32_t*>(core::host_allocate(page_bytes())));
    std::fill(p.get(), p.get() + (std::size_t{1} << page_bits), none);
    pages_.reserve(pages_.size() + 1);
    index_[key + 1] = static_cast<std::uint32_t>(pages_.size());
    pages_.push_back(std::move(p));  // cannot throw: reserved
    cache_[key % cache_size] = {key, pages_.back().get()};
    return pages_.back().get();
  }

  std::vector<std::unique_ptr<std::uint32_t, page_deleter>> pages_;
  id_table<std::uint32_t> index_;  ///< id / 256 + 1 -> index into pages_
  static constexpr std::size_t cache_size = 16;
  struct cached {
    tensor_id key = no_key;
    std::uint32_t* page = nullptr;
  };
  mutable std::array<cached, cache_size> cache_{};
};

/// A map from tensor ids to V.
template <class V> using id_map = id_table<V>;
}  // namespace fusegrad::autodiff
