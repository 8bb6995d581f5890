// Appends records to an in-memory chunk and writes chunks to a file. Thread-safe: launch threads add
// records, a collector thread flushes. Never throws; I/O errors are remembered and reported once.
#pragma once
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>
#include <mutex>
#include <string>

#include "profile/byte_io.h"
#include "profile/chunk_format.h"
#include "profile/record_codec.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace aiflame {

class ProfileWriter {
 public:
  ProfileWriter();
  ~ProfileWriter();
  ProfileWriter(const ProfileWriter&) = delete;
  ProfileWriter& operator=(const ProfileWriter&) = delete;

  // Creates path (O_EXCL unless overwrite; never follows a symlink) and writes the file header.
  bool open(const std::string& path, bool overwrite, std::string* error);
  // Appends chunks to an existing profile, after truncating it to `valid_bytes` (its last whole chunk).
  bool open_append(const std::string& path, uint64_t valid_bytes, std::string* error);
  // Uses an already open descriptor (tests); takes ownership.
  bool open_fd(int fd, std::string* error);
  void set_compression(Compression c, int level = 1) { compression_ = c; level_ = level; }

  template <class R>
  void add(const R& rec) {
    if (!accepting_.load(std::memory_order_relaxed)) return;  // closed: late CUPTI callbacks at exit
    ByteWriter& s = scratch();
    s.clear();
    encode(s, rec);
    add_encoded(record_type_of<R>(), s.data());
  }
  void add_encoded(RecordType type, const std::string& payload);

  // The same for a record added on a hot path (the launch callback's LaunchRecord): it goes to a
  // buffer of the calling thread, with no lock and no shared line written; flush() (the collector,
  // every interval, and close()) moves every thread's buffer into the chunk, also the buffers of
  // threads that have exited. The thread itself takes the lock only when its buffer is full. Records
  // of one thread keep their order; against other records and threads the order in the file is not
  // kept (the reader keys launches by correlation id). Issue 22: the launch record's add, under
  // add_mu_ against the collector's sample batches, cost 0.46-0.54 us per launch on the H100.
  void add_buffered(const LaunchRecord& rec) {
    if (!accepting_.load(std::memory_order_relaxed)) return;
    const RingLaunch launch = RingLaunch::of(rec);
    char f[2 + sizeof launch];
    f[0] = static_cast<char>(RecordType::BufferedLaunch);
    f[1] = static_cast<char>(sizeof launch);
    std::memcpy(f + 2, &launch, sizeof launch);
    add_launch_frame(f);
  }
  // A backward launch whose stack id is resolved later, off the launch path: by the next flush (the
  // collector's, or close()'s), outside the writer's add lock, by the resolver, which names the
  // launch's stack and may return BackwardStack records new to the profile (written before the
  // launch). A thread whose buffer is full only copies it then. Without a resolver the launch keeps
  // rec.stack_id.
  void add_buffered(const LaunchRecord& rec, const BackwardNote& note) {
    if (!accepting_.load(std::memory_order_relaxed)) return;
    const RingNote n = RingNote::of(note);
    const RingLaunch launch = RingLaunch::of(rec);
    char f[2 + sizeof n + sizeof launch];
    f[0] = static_cast<char>(RecordType::DeferredLaunch);
    f[1] = static_cast<char>(sizeof n + sizeof launch);
    std::memcpy(f + 2, &n, sizeof n);
    std::memcpy(f + 2 + sizeof n, &launch, sizeof launch);
    add_deferred_frame(f);
  }
  // A stack new to the process, added where it was interned (the launch path's StackCapture): into the
  // calling thread's buffer as it is (its id, native frames and named Python frames copied), encoded as
  // a Stack record by the flush that takes the buffer, which also takes the launch that first used it,
  // written after it. Issue 22: a new stack's encoding and its add under add_mu_ cost ~1.6 us on the
  // H100's loops (resnet_train: 550 new stacks in its first steps). At most kMaxBufferedFrames of each.
  static constexpr int kMaxBufferedFrames = 256;
  void add_buffered_stack(uint32_t id, const uint64_t* native, int nn, const PyFrame* python, int np);
  class BackwardResolver {
   public:
    virtual ~BackwardResolver() = default;
    // In a flush, one at a time: must not add records (a flush of the resolver's own would wait on itself).
    virtual uint32_t resolve(const LaunchRecord& launch, const BackwardNote& note,
                             std::vector<BackwardStackRecord>* fresh) = 0;
    // A deferred forward launch (note.forward): called for every one a flush takes before any
    // backward launch of that flush is resolved, since a step's forward launches may sit in a buffer
    // taken after the engine thread's. Its launch is then written as it is.
    virtual void remember(const LaunchRecord& launch, const BackwardNote& note) = 0;
  };
  void set_backward_resolver(BackwardResolver* r) { resolver_.store(r, std::memory_order_release); }
  // Prefetches, for writing, the line of this thread's buffer that the next add_buffered writes and
  // the line of the buffer's consumer position it reads: the launch path calls it first, so that the
  // record's write at its end does not wait for them (issue 22: 0.21-0.35 us per launch on the H100).
  void prefetch_buffered();
  // The calling thread's buffer for encoding a record (add_encoded never adds another, so one serves
  // every record type: one thread_local pointer, where one per type made the injection library's TLS
  // too big for glibc's static TLS surplus, see util/static_tls.h).
  static ByteWriter& scratch();
  template <class T>
  static T* keep(T* p) {
#if defined(__SANITIZE_ADDRESS__)
    __lsan_ignore_object(p);
#endif
    return p;
  }

  // Writes what has been added as one chunk. Returns false after an I/O error.
  bool flush();
  // Takes every thread's buffer and resolves its deferred launches, as flush() does, without writing a
  // chunk (a graph node captured during a deferred backward launch needs its forward launch known now).
  void resolve_deferred();
  bool close();
  size_t pending_bytes();
  // Times a launching thread found its buffer full and handed it over itself (under the add lock).
  uint64_t full_handovers() const { return full_handovers_.load(std::memory_order_relaxed); }
  uint64_t bytes_written() const { return bytes_written_.load(); }
  const std::string& error() const { return error_; }

 private:
  bool write_all(const void* p, size_t n);
  // A thread's buffer of framed records: a single-producer ring (its thread writes at head) whose
  // consumers (flush, or the thread when full) take it under add_mu_. Owned by the writer, so it
  // outlives its thread.
  struct ThreadBuffer {
    static constexpr size_t kBytes = 64 * 1024;
    std::atomic<uint64_t> head{0};  // bytes written, published with release by the owner thread
    alignas(64) std::atomic<uint64_t> tail{0};  // bytes taken, under add_mu_
    alignas(64) char data[kBytes];
  };
  // A launch as its thread's buffer holds it: the fields as they are, copied in a few stores, where its
  // encoding (varints, a byte count known only at the end, then a copy of that many bytes) was ~100
  // instructions and a branch per byte on the launch path (issue 22). The flush encodes it
  // (append_frames); the file's records are unchanged.
  struct RingLaunch {
    uint64_t timestamp;
    uint32_t correlation_id, tid, stack_id, api, device, prev_duration;
    uint8_t native_unwound;
    static RingLaunch of(const LaunchRecord& r) {
      return {r.timestamp, r.correlation_id, r.tid, r.stack_id, r.api, r.device, r.prev_duration,
              r.native_unwound ? uint8_t{1} : uint8_t{0}};
    }
    LaunchRecord record() const;
  };
  struct RingNote {
    uint64_t seq, tid;
    uint32_t caller;
    int32_t graph_task;
    bool node, forward;
    static RingNote of(const BackwardNote& n) { return {n.seq, n.tid, n.caller, n.graph_task, n.node, n.forward}; }
    BackwardNote note() const;
  };
  // A frame of a thread buffer: its type, its payload's length (under 128: one byte, as a record's
  // varint length in a file), then the payload; or its type, kLongFrame, the payload's length in two
  // bytes, then the payload (a buffered stack's).
  static constexpr uint8_t kLongFrame = 0xFF;
  static_assert(sizeof(RingNote) + sizeof(RingLaunch) < 0x80);
  // A framed record of n bytes into this thread's buffer (inlined into the two callers below, where n
  // is a constant: the copy is a few stores, no call). A full buffer is handed over (hand_over).
  void add_framed(const char* frame, size_t n);
  // The launch path's two frames (out of line, so that they sit in .text.hot with the launch path).
  void add_launch_frame(const char* frame);
  void add_deferred_frame(const char* frame);
  // A full buffer (the collector has not flushed for a while), then `frame`, into unresolved_.
  void hand_over(ThreadBuffer& b, const char* frame, size_t n);
  ThreadBuffer* thread_buffer();
  // Under add_mu_: appends its frames to `frames` (encoded, and deferred launches resolved, by
  // take_all, outside the lock).
  void take_buffer(ThreadBuffer& b, std::string& frames);
  void take_all();  // under resolve_mu_: every buffer taken, its launches encoded (deferred ones resolved) as a segment
  // The thread buffers' frames into out as a file's records: a BufferedLaunch encoded as a Launch, a
  // DeferredLaunch resolved then encoded, another frame as it is (under resolve_mu_).
  void append_frames(const char* p, size_t n, ByteWriter& out);
  std::atomic<BackwardResolver*> resolver_{nullptr};
  // Read at every launch (add_buffered, prefetch_buffered): on a line of their own. Beside add_mu_
  // and pending_, which every add() of another thread writes, each launch after such an add took a
  // coherence miss for them.
  alignas(64) const uint64_t serial_;  // tells this writer's thread buffers from another's
  std::atomic<bool> accepting_{false};  // between open and close
  alignas(64) std::vector<std::unique_ptr<ThreadBuffer>> buffers_;  // under add_mu_
  std::mutex add_mu_;
  std::mutex write_mu_;
  std::mutex resolve_mu_;   // held through a flush: deferred launches resolved in order, by one flush
  std::string unresolved_;  // under add_mu_: frames of full buffers, for the next flush
  std::atomic<uint64_t> full_handovers_{0};
  // What was added and not yet flushed, in order: sealed_ (whole segments, big records moved in),
  // then pending_ (being appended to).
  static constexpr size_t kBigRecord = 16 * 1024, kSegment = 256 * 1024;
  void seal_pending();  // under add_mu_: pending_ becomes the last sealed segment
  std::vector<std::string> sealed_;
  size_t pending_bytes_sealed_ = 0;
  ByteWriter pending_;
  int fd_ = -1;
  // zstd level 1: on recorded chunks 14% smaller than zlib level 1 and faster.
  Compression compression_ = Compression::Zstd;
  int level_ = 1;
  std::atomic<uint64_t> bytes_written_{0};
  std::string error_;
};

// Compresses raw with the given codec into out; false when the codec is not built in.
bool compress_chunk(Compression c, int level, const std::string& raw, std::string& out);

}  // namespace aiflame
