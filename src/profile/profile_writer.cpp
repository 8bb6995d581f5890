#include "profile/profile_writer.h"
#include "util/hot_path.h"
#include "util/tls_offsets.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <type_traits>

// zstd's static library calls optional tracing hooks, weak symbols, when the process defines them. In
// the injection library zstd is linked in and hidden; these hidden no-op definitions bind its
// references here, so a profiled program that defines the hooks for its own zstd never receives our
// compression contexts (whose layout its zstd may not share). 0: this call is not traced.
extern "C" {
__attribute__((visibility("hidden"))) unsigned long long ZSTD_trace_compress_begin(const void*) { return 0; }
__attribute__((visibility("hidden"))) void ZSTD_trace_compress_end(unsigned long long, const void*) {}
}

namespace aiflame {

namespace {
std::atomic<uint64_t> g_writer_serial{1};
}

ProfileWriter::ProfileWriter() : serial_(g_writer_serial.fetch_add(1)) {}

ProfileWriter::~ProfileWriter() { close(); }

bool ProfileWriter::open(const std::string& path, bool overwrite, std::string* error) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (overwrite ? O_TRUNC : O_EXCL);
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    if (error) *error = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  return open_fd(fd, error);
}

bool ProfileWriter::open_append(const std::string& path, uint64_t valid_bytes, std::string* error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(valid_bytes)) != 0 || lseek(fd, 0, SEEK_END) < 0) {
    if (error) *error = "cannot update " + path + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return false;
  }
  fd_ = fd;
  accepting_.store(true);
  return true;
}

bool ProfileWriter::open_fd(int fd, std::string* error) {
  fd_ = fd;
  char header[kFileHeaderSize] = {};
  std::memcpy(header, kMagic, 8);
  uint32_t v = kFormatVersion;
  std::memcpy(header + 8, &v, 4);
  if (!write_all(header, sizeof header)) {
    if (error) *error = error_;
    return false;
  }
  accepting_.store(true);
  return true;
}

ByteWriter& ProfileWriter::scratch() {
  // Never destroyed on purpose: CUPTI delivers records during the process's exit, after the main
  // thread's thread_local objects are gone; a destroyed scratch buffer there corrupted the heap.
  // (Kept reachable for LeakSanitizer too, after its thread has exited.)
  thread_local ByteWriter* s = keep(new ByteWriter);
  return *s;
}

void ProfileWriter::add_encoded(RecordType type, const std::string& payload) {
  if (payload.size() >= kBigRecord) {
    // A sample batch, a cubin: framed outside the lock and moved in, so the lock is held for a
    // moment, not for a copy of the whole record (which made launching threads that add a record,
    // a new stack's, wait behind the collector).
    ByteWriter framed;
    framed.u8(static_cast<uint8_t>(type));
    framed.str(payload);
    std::string bytes = framed.take();
    std::lock_guard<std::mutex> lock(add_mu_);
    seal_pending();
    pending_bytes_sealed_ += bytes.size();
    sealed_.push_back(std::move(bytes));
    return;
  }
  std::lock_guard<std::mutex> lock(add_mu_);
  pending_.u8(static_cast<uint8_t>(type));
  pending_.str(payload);
  // Bounded, so that growing it never copies more than a segment under the lock.
  if (pending_.size() >= kSegment) seal_pending();
}

void ProfileWriter::seal_pending() {
  if (pending_.size() == 0) return;
  pending_bytes_sealed_ += pending_.size();
  sealed_.push_back(pending_.take());
  pending_.clear();
}

size_t ProfileWriter::pending_bytes() {
  std::lock_guard<std::mutex> lock(add_mu_);
  size_t n = pending_.size() + pending_bytes_sealed_ + unresolved_.size();
  for (const auto& b : buffers_) n += b->head.load(std::memory_order_acquire) - b->tail.load(std::memory_order_relaxed);
  return n;
}

namespace {
struct Last {
  uint64_t serial = 0;
  void* buffer = nullptr;
  uint64_t head = 0;  // the buffer's head as this thread (its only writer) last wrote it
};
thread_local constinit Last t_last;  // trivially destructible: still usable during the process's exit
AIFLAME_TLS_ENROLL(tls::kWriterLast, t_last);
}  // namespace

AIFLAME_HOT void ProfileWriter::prefetch_buffered() {
  if (!accepting_.load(std::memory_order_relaxed)) return;
  // From this thread's copy of the head: loading the buffer's own head line here (cold in a training
  // loop) was a miss on the launch path's critical path, before any walk.
  const Last& l = *AIFLAME_TLS(tls::kWriterLast, t_last);
  ThreadBuffer* b = l.serial == serial_ ? static_cast<ThreadBuffer*>(l.buffer) : thread_buffer();
  const uint64_t head = l.serial == serial_ ? l.head : b->head.load(std::memory_order_relaxed);
  __builtin_prefetch(&b->head, 1);
  __builtin_prefetch(&b->tail);
  __builtin_prefetch(b->data + head % ThreadBuffer::kBytes, 1);
}

AIFLAME_HOT ProfileWriter::ThreadBuffer* ProfileWriter::thread_buffer() {
  // One writer per thread in the recorder; a second one (tests) takes the lock when it alternates.
  Last& last = *AIFLAME_TLS(tls::kWriterLast, t_last);
  if (last.serial == serial_) return static_cast<ThreadBuffer*>(last.buffer);
  thread_local std::vector<Last>* mine = keep(new std::vector<Last>);  // this thread's buffer per writer
  for (const Last& l : *mine)
    if (l.serial == serial_) {
      last = l;
      auto* b = static_cast<ThreadBuffer*>(l.buffer);
      last.head = b->head.load(std::memory_order_relaxed);
      return b;
    }
  auto b = std::make_unique<ThreadBuffer>();
  ThreadBuffer* raw = b.get();
  {
    std::lock_guard<std::mutex> lock(add_mu_);
    buffers_.push_back(std::move(b));
  }
  mine->push_back({serial_, raw, 0});
  last = {serial_, raw, 0};
  return raw;
}

inline __attribute__((always_inline)) void ProfileWriter::add_framed(const char* frame, size_t n) {
  Last* const last = AIFLAME_TLS(tls::kWriterLast, t_last);  // one address here, not one in thread_buffer() too
  ThreadBuffer& b = last->serial == serial_ ? *static_cast<ThreadBuffer*>(last->buffer) : *thread_buffer();
  const uint64_t head = b.head.load(std::memory_order_relaxed);
  if (ThreadBuffer::kBytes - (head - b.tail.load(std::memory_order_acquire)) < n) {
    hand_over(b, frame, n);
    return;
  }
  const size_t at = head % ThreadBuffer::kBytes;
  if (at + n <= ThreadBuffer::kBytes) {
    std::memcpy(b.data + at, frame, n);
  } else {  // around the buffer's end
    const size_t first = ThreadBuffer::kBytes - at;
    std::memcpy(b.data + at, frame, first);
    std::memcpy(b.data, frame + first, n - first);
  }
  b.head.store(head + n, std::memory_order_release);
  last->head = head + n;  // t_last is this writer's (thread_buffer() makes it so)
}
AIFLAME_HOT void ProfileWriter::add_launch_frame(const char* frame) { add_framed(frame, 2 + sizeof(RingLaunch)); }
AIFLAME_HOT void ProfileWriter::add_deferred_frame(const char* frame) {
  add_framed(frame, 2 + sizeof(RingNote) + sizeof(RingLaunch));
}

void ProfileWriter::add_buffered_stack(uint32_t id, const uint64_t* native, int nn, const PyFrame* python, int np) {
  if (!accepting_.load(std::memory_order_relaxed)) return;
  static_assert(std::is_trivially_copyable_v<PyFrame> && sizeof(PyFrame) == 12);
  nn = std::clamp(nn, 0, kMaxBufferedFrames);
  np = std::clamp(np, 0, kMaxBufferedFrames);
  constexpr size_t kHeader = 4, kFixed = 8;  // frame: type, kLongFrame, length; payload: id, nn, np
  char f[kHeader + kFixed + sizeof(uint64_t) * kMaxBufferedFrames + sizeof(PyFrame) * kMaxBufferedFrames];
  const size_t len = kFixed + sizeof(uint64_t) * static_cast<size_t>(nn) + sizeof(PyFrame) * static_cast<size_t>(np);
  static_assert(sizeof f - kHeader <= UINT16_MAX, "a long frame's length in two bytes");
  const auto len16 = static_cast<uint16_t>(len), nn16 = static_cast<uint16_t>(nn), np16 = static_cast<uint16_t>(np);
  f[0] = static_cast<char>(RecordType::BufferedStack);
  f[1] = static_cast<char>(kLongFrame);
  std::memcpy(f + 2, &len16, 2);
  char* p = f + kHeader;
  std::memcpy(p, &id, 4);
  std::memcpy(p + 4, &nn16, 2);
  std::memcpy(p + 6, &np16, 2);
  if (nn) std::memcpy(p + kFixed, native, sizeof(uint64_t) * static_cast<size_t>(nn));
  if (np) std::memcpy(p + kFixed + sizeof(uint64_t) * static_cast<size_t>(nn), python, sizeof(PyFrame) * static_cast<size_t>(np));
  add_framed(f, kHeader + len);
}

LaunchRecord ProfileWriter::RingLaunch::record() const {
  return LaunchRecord{correlation_id, tid, timestamp, stack_id, api, native_unwound != 0, device, prev_duration};
}

BackwardNote ProfileWriter::RingNote::note() const { return BackwardNote{caller, node, forward, seq, tid, graph_task}; }

void ProfileWriter::hand_over(ThreadBuffer& b, const char* frame, size_t n) {
  // Only copied: its launches are encoded, and deferred ones resolved, by the next flush, never here on
  // the launch path (a full buffer holds ~1,900 launches).
  std::lock_guard<std::mutex> lock(add_mu_);
  full_handovers_.fetch_add(1, std::memory_order_relaxed);
  take_buffer(b, unresolved_);
  unresolved_.append(frame, n);
}

void ProfileWriter::take_buffer(ThreadBuffer& b, std::string& frames) {
  uint64_t head = b.head.load(std::memory_order_acquire), tail = b.tail.load(std::memory_order_relaxed);
  if (head == tail) return;
  size_t at = tail % ThreadBuffer::kBytes, n = head - tail, first = std::min(n, ThreadBuffer::kBytes - at);
  frames.append(b.data + at, first);
  frames.append(b.data, n - first);
  b.tail.store(head, std::memory_order_release);
}

namespace {
// A frame's payload as the struct the launch path copied in (its length checked by the caller).
template <class T>
T ring_payload(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// A record into out as a file holds it (its type, its length, its encoding), encoded through w.
template <class R>
void put_record(const R& rec, ByteWriter& w, ByteWriter& out) {
  w.clear();
  encode(w, rec);
  out.u8(static_cast<uint8_t>(record_type_of<R>()));
  out.str(w.data());
}
// A buffered stack's payload (ProfileWriter::add_buffered_stack) as the Stack record it stands for;
// false if its counts do not fit its length (never: the launch path writes whole frames).
bool buffered_stack(const char* p, size_t len, StackRecord& rec) {
  if (len < 8) return false;
  uint16_t nn = 0, np = 0;
  std::memcpy(&rec.id, p, 4);
  std::memcpy(&nn, p + 4, 2);
  std::memcpy(&np, p + 6, 2);
  if (len != 8 + sizeof(uint64_t) * nn + sizeof(PyFrame) * np) return false;
  rec.native.resize(nn);
  rec.python.resize(np);
  if (nn) std::memcpy(rec.native.data(), p + 8, sizeof(uint64_t) * nn);
  if (np) std::memcpy(static_cast<void*>(rec.python.data()), p + 8 + sizeof(uint64_t) * nn, sizeof(PyFrame) * np);
  return true;
}
}  // namespace

void ProfileWriter::append_frames(const char* p, size_t n, ByteWriter& out) {
  // Frames of the thread buffers: type, one length byte, payload (add_buffered); or type, kLongFrame,
  // a two-byte length, payload (add_buffered_stack).
  auto for_each_frame = [&](auto&& fn) {
    for (size_t at = 0; at + 2 <= n;) {
      size_t header = 2, len = static_cast<uint8_t>(p[at + 1]);
      if (len == kLongFrame) {
        if (at + 4 > n) break;
        uint16_t len16 = 0;
        std::memcpy(&len16, p + at + 2, 2);
        header = 4;
        len = len16;
      }
      if (at + header + len > n) break;  // never: the launch path writes whole frames
      fn(static_cast<RecordType>(static_cast<uint8_t>(p[at])), p + at, header, len);
      at += header + len;
    }
  };
  constexpr size_t kDeferred = sizeof(RingNote) + sizeof(RingLaunch);
  auto deferred = [](const char* f, BackwardNote& note, LaunchRecord& launch) {
    note = ring_payload<RingNote>(f + 2).note();
    launch = ring_payload<RingLaunch>(f + 2 + sizeof(RingNote)).record();
  };
  BackwardResolver* resolver = resolver_.load(std::memory_order_acquire);
  if (resolver)  // the forward launches first (BackwardResolver::remember)
    for_each_frame([&](RecordType type, const char* f, size_t, size_t len) {
      if (type != RecordType::DeferredLaunch || len != kDeferred) return;
      BackwardNote note;
      LaunchRecord launch;
      deferred(f, note, launch);
      if (note.forward) resolver->remember(launch, note);
    });
  std::vector<BackwardStackRecord> fresh;
  ByteWriter w;
  StackRecord stack;
  for_each_frame([&](RecordType type, const char* f, size_t header, size_t len) {
    if (type == RecordType::BufferedStack) {
      if (buffered_stack(f + header, len, stack)) put_record(stack, w, out);
      return;
    }
    if (header != 2) return;  // no other long frame
    if (type == RecordType::BufferedLaunch && len == sizeof(RingLaunch)) {
      put_record(ring_payload<RingLaunch>(f + 2).record(), w, out);
      return;
    }
    if (type != RecordType::DeferredLaunch || len != kDeferred) {
      out.raw(f, 2 + len);
      return;
    }
    BackwardNote note;
    LaunchRecord launch;
    deferred(f, note, launch);
    fresh.clear();
    if (resolver && !note.forward) launch.stack_id = resolver->resolve(launch, note, &fresh);
    for (const auto& rec : fresh) put_record(rec, w, out);
    put_record(launch, w, out);
  });
}

bool compress_chunk(Compression c, int level, const std::string& raw, std::string& out) {
  if (c == Compression::Zstd) {
    out.resize(ZSTD_compressBound(raw.size()));
    // One context per flushing thread, reused, and never freed: CUPTI flushes during the process's exit,
    // after thread_local destructors would have run (see ProfileWriter::add).
    thread_local ZSTD_CCtx* ctx = ZSTD_createCCtx();
    if (!ctx) return false;
    size_t n = ZSTD_compressCCtx(ctx, out.data(), out.size(), raw.data(), raw.size(), level);
    if (ZSTD_isError(n)) return false;
    out.resize(n);
    return true;
  }
  if (c != Compression::Zlib) return false;
  uLongf cap = compressBound(raw.size());
  out.resize(cap);
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &cap, reinterpret_cast<const Bytef*>(raw.data()),
                raw.size(), level) != Z_OK)
    return false;
  out.resize(cap);
  return true;
}

void ProfileWriter::take_all() {
  std::string frames;  // the thread buffers' frames: encoded (deferred launches resolved) outside add_mu_
  {
    std::lock_guard<std::mutex> lock(add_mu_);
    frames.swap(unresolved_);
    for (auto& b : buffers_) take_buffer(*b, frames);
  }
  if (frames.empty()) return;
  ByteWriter records;
  append_frames(frames.data(), frames.size(), records);
  std::string bytes = records.take();
  std::lock_guard<std::mutex> lock(add_mu_);  // moved in after what was added before, as a segment
  seal_pending();
  pending_bytes_sealed_ += bytes.size();
  sealed_.push_back(std::move(bytes));
}

void ProfileWriter::resolve_deferred() {
  std::lock_guard<std::mutex> resolving(resolve_mu_);
  take_all();
}

bool ProfileWriter::flush() {
  // One flush at a time resolves deferred launches, so that a thread's launches keep their order.
  std::lock_guard<std::mutex> resolving(resolve_mu_);
  take_all();
  std::string raw;
  std::vector<std::string> sealed;
  {
    std::lock_guard<std::mutex> lock(add_mu_);
    seal_pending();
    if (sealed_.empty()) return error_.empty();
    sealed.swap(sealed_);
    pending_bytes_sealed_ = 0;
  }
  // One chunk of everything added, in order (joined outside the lock).
  if (sealed.size() == 1) {
    raw = std::move(sealed[0]);
  } else {
    size_t total = 0;
    for (const auto& part : sealed) total += part.size();
    raw.reserve(total);
    for (const auto& part : sealed) raw += part;
  }
  std::lock_guard<std::mutex> lock(write_mu_);
  if (fd_ < 0 || !error_.empty()) return false;
  // Split oversized chunks never happens in practice (flushes are every few ms); guard anyway.
  Compression used = compression_;
  std::string stored;
  if (used == Compression::None || !compress_chunk(used, level_, raw, stored) || stored.size() >= raw.size()) {
    used = Compression::None;
    stored.swap(raw);
  }
  uint32_t raw_size = used == Compression::None ? static_cast<uint32_t>(stored.size())
                                                : static_cast<uint32_t>(raw.size());
  unsigned char header[kChunkHeaderSize] = {};
  header[0] = static_cast<unsigned char>(used);
  uint32_t stored_size = static_cast<uint32_t>(stored.size());
  uint32_t crc = static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(stored.data()), static_cast<uInt>(stored.size())));
  std::memcpy(header + 4, &raw_size, 4);
  std::memcpy(header + 8, &stored_size, 4);
  std::memcpy(header + 12, &crc, 4);
  // Header and payload in one buffer: one write() keeps a chunk whole unless the process dies mid-call.
  std::string buf(reinterpret_cast<char*>(header), sizeof header);
  buf += stored;
  return write_all(buf.data(), buf.size());
}

bool ProfileWriter::write_all(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd_, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      error_ = std::string("write failed: ") + std::strerror(errno);
      return false;
    }
    c += w;
    n -= static_cast<size_t>(w);
    bytes_written_ += static_cast<uint64_t>(w);
  }
  return true;
}

bool ProfileWriter::close() {
  accepting_.store(false);
  bool ok = flush();
  std::lock_guard<std::mutex> lock(write_mu_);
  if (fd_ >= 0) {
    if (::close(fd_) != 0 && error_.empty()) error_ = std::string("close failed: ") + std::strerror(errno);
    fd_ = -1;
  }
  return ok && error_.empty();
}

}  // namespace aiflame
