// A region reserved from one memory tier and carved into blocks: DeepTM's
// reserved regions for batching small tensors and adjoining long-lived ones
// (docs/aggregation.md).
//
// Chunks of whole, page-aligned pages are reserved from the tier on demand
// and stay reserved until the region is trimmed or destroyed. Inside a chunk,
// free extents are handed out first fit at 64-byte granularity, so blocks
// reserved one after another sit next to each other. Every page counts the
// committed blocks that overlap it: pages_in_use() is the region's page-level
// footprint. Not thread-safe (the allocator's lock guards it); no LibTorch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "tiers/memory_tier.h"

namespace tensortier {

class PageRegion {
 public:
  static constexpr size_t kPageBytes = 4096;
  static constexpr size_t kGranuleBytes = 64;

  // `tier` must outlive the region.
  PageRegion(MemoryTier* tier, size_t chunk_bytes);
  ~PageRegion();  // returns every chunk to the tier
  PageRegion(const PageRegion&) = delete;
  PageRegion& operator=(const PageRegion&) = delete;

  // The space a block of `bytes` takes: blocks are adjacent when one starts
  // at the other's start + Footprint(its bytes).
  static size_t Footprint(size_t bytes) { return (bytes + kGranuleBytes - 1) / kGranuleBytes * kGranuleBytes; }

  // Takes Footprint(bytes) out of the free space (first fit; a new chunk of
  // max(chunk_bytes, bytes) when none fits). nullptr when the tier refuses
  // the chunk. Reserved space is neither free nor in use: Commit blocks in
  // it, Unreserve what is left.
  void* Reserve(size_t bytes);
  void Unreserve(void* p, size_t bytes);
  // Pages that committing [p, p + bytes) would bring into use.
  size_t NewPagesOf(const void* p, size_t bytes) const;
  // Marks a block in reserved space as in use; returns the pages it brought into use.
  size_t Commit(void* p, size_t bytes);
  // Ends a committed block and frees its space; returns the pages it left unused.
  size_t Release(void* p, size_t bytes);

  bool Contains(const void* p) const;
  uint64_t reserved_bytes() const { return reserved_bytes_; }  // chunks taken from the tier
  uint64_t committed_bytes() const { return committed_bytes_; }
  uint64_t pages_in_use() const { return pages_in_use_; }
  size_t chunks() const { return chunks_.size(); }
  // Returns chunks without committed or reserved blocks to the tier; the bytes returned.
  uint64_t Trim();
  MemoryTier& tier() const { return *tier_; }

 private:
  struct Chunk {
    char* base = nullptr;
    size_t bytes = 0;
    size_t free_bytes = 0;
    std::map<size_t, size_t> free;          // offset -> length, coalesced
    std::vector<uint32_t> blocks_on_page;   // committed blocks overlapping each page
  };
  Chunk* ChunkOf(const void* p) const;
  // A committed block's place: its chunk, its offset there and the pages it
  // overlaps (a zero-byte block takes one byte). Throws std::logic_error
  // naming `op` when `p` is not in the region.
  struct BlockPages {
    Chunk* chunk;
    size_t offset, first_page, last_page;
  };
  BlockPages PagesOf(void* p, size_t bytes, const char* op) const;
  void* TakeFrom(Chunk& c, size_t footprint);
  void GiveBack(Chunk& c, size_t offset, size_t footprint);

  MemoryTier* tier_;
  size_t chunk_bytes_;
  std::map<const char*, std::unique_ptr<Chunk>> chunks_;  // by base address
  uint64_t reserved_bytes_ = 0, committed_bytes_ = 0, pages_in_use_ = 0;
};

}  // namespace tensortier
