#include "allocator/page_region.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>

namespace tensortier {


PageRegion::PageRegion(MemoryTier* tier, size_t chunk_bytes)
    : tier_(tier), chunk_bytes_((chunk_bytes + kPageBytes - 1) / kPageBytes * kPageBytes) {
  if (tier_ == nullptr || chunk_bytes_ == 0) throw std::invalid_argument("PageRegion: needs a tier and a chunk size");
}

PageRegion::~PageRegion() {
  for (auto& [base, c] : chunks_) tier_->Free(c->base, c->bytes);
}

PageRegion::Chunk* PageRegion::ChunkOf(const void* p) const {
  const char* cp = static_cast<const char*>(p);
  auto it = chunks_.upper_bound(cp);
  if (it == chunks_.begin()) return nullptr;
  --it;
  Chunk* c = it->second.get();
  return cp < c->base + c->bytes ? c : nullptr;
}

bool PageRegion::Contains(const void* p) const { return ChunkOf(p) != nullptr; }

void* PageRegion::TakeFrom(Chunk& c, size_t footprint) {
  for (auto it = c.free.begin(); it != c.free.end(); ++it) {
    if (it->second < footprint) continue;
    const size_t offset = it->first, length = it->second;
    c.free.erase(it);
    if (length > footprint) c.free.emplace(offset + footprint, length - footprint);
    c.free_bytes -= footprint;
    return c.base + offset;
  }
  return nullptr;
}

void* PageRegion::Reserve(size_t bytes) {
  const size_t footprint = Footprint(bytes == 0 ? 1 : bytes);
  for (auto& [base, c] : chunks_)
    if (c->free_bytes >= footprint)
      if (void* p = TakeFrom(*c, footprint)) return p;
  const size_t size = std::max(chunk_bytes_, (footprint + kPageBytes - 1) / kPageBytes * kPageBytes);
  void* mem = tier_->Allocate(size, kPageBytes);
  if (mem == nullptr) return nullptr;
  auto c = std::make_unique<Chunk>();
  c->base = static_cast<char*>(mem);
  c->bytes = size;
  c->free_bytes = size;
  c->free.emplace(0, size);
  c->blocks_on_page.assign(size / kPageBytes, 0);
  reserved_bytes_ += size;
  Chunk& ref = *c;
  chunks_.emplace(ref.base, std::move(c));
  return TakeFrom(ref, footprint);
}

void PageRegion::GiveBack(Chunk& c, size_t offset, size_t footprint) {
  auto next = c.free.lower_bound(offset);
  if (next != c.free.end() && next->first < offset + footprint)
    throw std::logic_error("PageRegion: freeing space that is already free");
  size_t start = offset, length = footprint;
  if (next != c.free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > offset) throw std::logic_error("PageRegion: freeing space that is already free");
    if (prev->first + prev->second == offset) {
      start = prev->first;
      length += prev->second;
      c.free.erase(prev);
    }
  }
  if (next != c.free.end() && next->first == offset + footprint) {
    length += next->second;
    c.free.erase(next);
  }
  c.free.emplace(start, length);
  c.free_bytes += footprint;
}

void PageRegion::Unreserve(void* p, size_t bytes) {
  Chunk* c = ChunkOf(p);
  if (c == nullptr) throw std::logic_error("PageRegion::Unreserve: not in the region");
  GiveBack(*c, static_cast<char*>(p) - c->base, Footprint(bytes == 0 ? 1 : bytes));
}

size_t PageRegion::NewPagesOf(const void* p, size_t bytes) const {
  const Chunk* c = ChunkOf(p);
  if (c == nullptr || bytes == 0) return 0;
  const size_t off = static_cast<const char*>(p) - c->base;
  size_t n = 0;
  for (size_t pg = off / kPageBytes; pg <= (off + bytes - 1) / kPageBytes; ++pg) n += c->blocks_on_page[pg] == 0;
  return n;
}

PageRegion::BlockPages PageRegion::PagesOf(void* p, size_t bytes, const char* op) const {
  Chunk* c = ChunkOf(p);
  if (c == nullptr) throw std::logic_error(std::string("PageRegion::") + op + ": not in the region");
  const size_t off = static_cast<char*>(p) - c->base;
  const size_t last = off + (bytes == 0 ? 1 : bytes) - 1;
  return {c, off, off / kPageBytes, last / kPageBytes};
}

size_t PageRegion::Commit(void* p, size_t bytes) {
  const BlockPages b = PagesOf(p, bytes, "Commit");
  size_t n = 0;
  for (size_t pg = b.first_page; pg <= b.last_page; ++pg) n += b.chunk->blocks_on_page[pg]++ == 0;
  committed_bytes_ += Footprint(bytes == 0 ? 1 : bytes);
  pages_in_use_ += n;
  return n;
}

size_t PageRegion::Release(void* p, size_t bytes) {
  const BlockPages b = PagesOf(p, bytes, "Release");
  size_t n = 0;
  for (size_t pg = b.first_page; pg <= b.last_page; ++pg) n += --b.chunk->blocks_on_page[pg] == 0;
  committed_bytes_ -= Footprint(bytes == 0 ? 1 : bytes);
  pages_in_use_ -= n;
  GiveBack(*b.chunk, b.offset, Footprint(bytes == 0 ? 1 : bytes));
  return n;
}

uint64_t PageRegion::Trim() {
  uint64_t returned = 0;
  for (auto it = chunks_.begin(); it != chunks_.end();) {
    Chunk& c = *it->second;
    if (c.free_bytes == c.bytes) {
      tier_->Free(c.base, c.bytes);
      returned += c.bytes;
      reserved_bytes_ -= c.bytes;
      it = chunks_.erase(it);
    } else {
      ++it;
    }
  }
  return returned;
}

}  // namespace tensortier
