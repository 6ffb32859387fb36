// The walker's world: two validated adapters, the model of every object it created, every
// request in flight and every byte it expects, and exec(), which runs one Op and checks it.
#pragma once

#include "walk.hpp"

#include "ndk/lam.hpp"

#include <chrono>
#include <new>
#include <optional>
#include <functional>

namespace walk {

enum class Kind : uint8_t { Cq, Pd, Mr, Mw, Srq, Qp, Connector, Listener, Endpoint, Count };

constexpr uint32_t kChunk = 64;           // buffer reservation granularity
constexpr int64_t kIntendOverpost = 1 << 29; // flag bits of a post op: misuse on purpose
constexpr int64_t kIntendOverrun = 1 << 28;
constexpr int64_t kIntentMask = kIntendOverpost | kIntendOverrun;

// The byte at stream offset `off` of what data op `op` moves: the first 8 bytes of a message
// are the op id (so a receive names its send), the rest a hash of (op, offset).  walk.py's
// scenarios compute the same bytes.
inline uint8_t pattern(uint64_t op, uint64_t off)
{
    if (off < 8)
        return static_cast<uint8_t>(op >> (8 * off));
    uint64_t x = op * 0x9E3779B97F4A7C15ull + (off >> 3) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return static_cast<uint8_t>(x >> ((off & 7) * 8));
}

// The argument slot holding a post's flags (-1: none).
inline int flag_slot(Code code)
{
    switch (code) {
    case Code::send: return 6;
    case Code::sendinv: return 4;
    case Code::write:
    case Code::read: return 6;
    case Code::bind: return 5;
    case Code::inval: return 2;
    case Code::fastreg: return 7;
    default: return -1;
    }
}

// Page-aligned bytes: a buffer's page offsets (so a LAM's FBO) are the same in every run and
// in the Python replay (walk.py's buffers are mmap'ed pages).
template <class T>
struct PageAllocator {
    using value_type = T;
    PageAllocator() = default;
    template <class U>
    PageAllocator(const PageAllocator<U> &) {}
    T *allocate(size_t n)
    {
        return static_cast<T *>(::operator new(n * sizeof(T), std::align_val_t{4096}));
    }
    void deallocate(T *p, size_t) { ::operator delete(p, std::align_val_t{4096}); }
    bool operator==(const PageAllocator &) const { return true; }
};

struct Buf {
    std::vector<uint8_t, PageAllocator<uint8_t>> d;
    std::vector<uint8_t> busy; // one flag per kChunk bytes: in use by a request in flight
    explicit Buf(size_t n) : d(n), busy((n + kChunk - 1) / kChunk) {}
    bool free_range(uint64_t off, uint64_t len) const;
    void mark(uint64_t off, uint64_t len, bool on);
};

struct Span {
    std::shared_ptr<Buf> b;
    uint32_t off = 0, len = 0;
};

struct Obj {
    Kind kind{};
    int ad = 0;
    int64_t id = 0;
    std::shared_ptr<ndk::Object> h;
    int64_t pd = -1; // parent PD (MR, MW, SRQ, QP)
    // CQ
    uint32_t depth = 0;
    int64_t pending = 0; // requests in flight that may put an entry here
    bool tainted = false; // may have overrun: its requests may vanish
    // MR
    bool fast = false, registered = false;
    std::shared_ptr<Buf> buf;
    uint32_t flags = 0, ltok = 0, rtok = 0;
    bool fr_init = false;
    // fast-register MR: InitializeFastRegisterMr's page count and RemoteAccess, and the
    // mapping of its last NdkFastRegister: byte k of [fr_base, fr_base + fr_len) is at
    // fr_buf offset fr_map[(fr_fbo + k) / 4096] + (fr_fbo + k) % 4096, always inside the
    // LAM's region [fr_lo, fr_hi) of that buffer (LAM pages x FBO, digest 1.7)
    uint32_t fr_pages = 0;
    bool fr_remote = false;
    int fr_state = 0; // 0 unmapped, 1 FastRegister in flight, 2 mapped, 3 invalidation in
                      // flight, 4 unknown (a failed invalidation leaves it undefined)
    bool fr_stale = false; // its LAM was released while it was mapped
    int64_t fr_lam = -1;
    std::shared_ptr<Buf> fr_buf;
    std::vector<int64_t> fr_map;
    uint64_t fr_base = 0;
    uint32_t fr_len = 0, fr_fbo = 0, fr_flags = 0, fr_lo = 0, fr_hi = 0;
    int64_t uses = 0; // requests in flight that use its tokens (fast-register MR)
    // MW
    int bind_state = 0; // 0 unbound, 1 bind in flight, 2 bound
    int64_t mw_mr = -1;
    uint32_t mw_off = 0, mw_len = 0, mw_tok = 0, mw_flags = 0;
    // SRQ / QP queues: op ids in flight, in posting order
    std::deque<uint64_t> rq, iq;
    uint32_t rdepth = 0, idepth = 0, rsge = 0, isge = 0, inl = 0;
    int64_t rcq = -1, icq = -1, srq = -1;
    int qstate = 0;      // QP: 0 idle, 1 connected, 2 spent; connector: 0 idle, 1 connected, 2 spent
    int64_t peer = -1;   // QP: the connected QP
    int64_t conn = -1;   // QP: its connector; connector: its QP
    int64_t avail = 0;   // QP: receives posted and not yet consumed by a send (model)
    bool defer_open = false;
    bool no_conndata = false; // connector: Accept or CompleteConnect was called (digest 1.8)
    // listener
    uint16_t port = 0;
    bool listening = false, paused = false;
};

struct Req {
    Code code{};
    int64_t qp = -1, cq = -1, srq = -1;
    int queue = 0; // 0 initiator, 1 receive, 2 SRQ
    bool silent = false;
    std::vector<Span> check; // what a success must have written (write: remote; read/recv: sink)
    std::vector<Span> hold;  // reserved ranges, released at completion
    int64_t target = -1;     // bind: MW; inval: MR or MW; sendinv: the peer's MR or MW;
                             // fastreg, read with local invalidate: the MR
    uint32_t len = 0;
    std::vector<int64_t> frs;  // fast-register MRs whose tokens it uses (Obj::uses)
    std::vector<int64_t> lams; // LAMs it uses (LamRec::uses): not released meanwhile
    const char *tally = nullptr; // its completion's status is counted under this name
    bool judged = false;       // its completion must be `want` (or CANCELLED: flushed)
    NTSTATUS want = STATUS_SUCCESS;
};

// A logical address mapping (NdkBuildLAM) over [off, off + len) of a buffer the walker owns.
struct LamRec {
    int ad = 0;
    std::shared_ptr<ndk::Lam> h;
    std::shared_ptr<Buf> buf;
    uint32_t off = 0, len = 0, fbo = 0;
    std::vector<NDK_LOGICAL_ADDRESS> pages;
    int64_t uses = 0;
    // the buffer offset of byte 0 of page i (may lie before the region, or the buffer)
    int64_t page_start(size_t i) const
    {
        return static_cast<int64_t>(off) - fbo + static_cast<int64_t>(i) * 4096;
    }
};

struct SendRec {
    int64_t to_qp = -1;
    uint32_t len = 0;
};

// The buffer spans of bytes [off, off + len) of a fast registration whose page j starts at
// buffer offset map[j], FBO `fbo`; false when a byte lies outside [lo, hi) (the LAM's region:
// the walker's own memory) or beyond the pages.
inline bool map_spans(const std::shared_ptr<Buf> &buf, const std::vector<int64_t> &map,
                      uint32_t fbo, uint32_t lo, uint32_t hi, uint64_t off, uint64_t len,
                      std::vector<Span> &out)
{
    uint64_t at = fbo + off;
    while (len > 0) {
        uint64_t j = at / 4096, in = at % 4096;
        if (j >= map.size())
            return false;
        uint64_t n = std::min<uint64_t>(len, 4096 - in);
        int64_t start = map[j] + static_cast<int64_t>(in);
        if (start < static_cast<int64_t>(lo) || start + static_cast<int64_t>(n) > hi)
            return false;
        if (!out.empty() && out.back().b == buf && out.back().off + out.back().len == start)
            out.back().len += static_cast<uint32_t>(n);
        else
            out.push_back(Span{buf, static_cast<uint32_t>(start), static_cast<uint32_t>(n)});
        at += n;
        len -= n;
    }
    return true;
}

inline bool fr_spans(const Obj &mr, uint64_t off, uint64_t len, std::vector<Span> &out)
{
    return mr.fr_buf && off + len <= mr.fr_len &&
           map_spans(mr.fr_buf, mr.fr_map, mr.fr_fbo, mr.fr_lo, mr.fr_hi, off, len, out);
}

// MR page j of a FastRegister over `n` pages of LAM `l` from page `first` (order 1: in
// reverse), wrapping past the LAM's last page (a page array longer than the LAM).
inline size_t fr_page(const LamRec &l, int64_t first, int64_t n, int order, int64_t j)
{
    int64_t k = order ? first + n - 1 - j : first + j;
    int64_t p = static_cast<int64_t>(l.pages.size());
    return static_cast<size_t>(((k % p) + p) % p);
}

class World {
public:
    World(const Config &config, std::vector<std::string> options);
    ~World();
    static std::vector<std::string> default_options(const Config &config);

    bool open(); // false + failure set when an adapter does not open
    void exec(const Op &op);
    // Generate the next op from `rng` (mostly valid against the model).
    Op generate(std::mt19937_64 &rng, uint64_t id);
    // End of walk: flush, drain, account every request, close everything, judge the record.
    void finish();

    Failure failure;
    uint64_t skipped = 0;
    StatusCounts statuses;
    std::map<std::string, uint64_t> warnings;
    std::map<std::string, uint64_t> intended;
    const std::vector<std::string> &options() const { return options_; }

private:
    friend struct Gen;
    Obj *get(int64_t id, Kind kind);
    void add(Obj obj);
    void remove(int64_t id);
    void note(const char *fn, NTSTATUS status);
    void fail(const std::string &kind, const std::string &key, const std::string &detail);
    bool wait(const ndk::Call &call, const char *fn);
    void note_call(const char *fn, const ndk::Call &call); // inline status, then the completion's
    void check_violations(const std::set<std::string> &allowed);
    std::chrono::duration<double> wait_for() const;
    // The connection `connect` delivered at `listener`; nothing once `connect` finished with a
    // failure, or after wait_for().
    std::shared_ptr<ndk::Connector> next_connection_or_failure(ndk::Listener &listener,
                                                               const ndk::Call &connect);

    template <class T>
    std::shared_ptr<T> handle(int64_t id, Kind kind)
    {
        Obj *o = get(id, kind);
        return o ? std::static_pointer_cast<T>(o->h) : nullptr;
    }

    // requests
    bool post_common(const Op &op, Obj &qp_or_srq, int queue, NTSTATUS status, Req req,
                     int64_t cq_id);
    void complete(const NDK_RESULT_EX &r, int64_t cq_id);
    void settle(uint64_t id, Req &req, bool success, const NDK_RESULT_EX *r);
    void drop_request(uint64_t id);
    void poll_cq(int64_t cq_id, ULONG n, bool ex);
    void drain_for(const std::set<int64_t> &qps, bool judge);
    void abandon_cq(int64_t cq_id);
    // An SGE of `len` bytes at offset `off` of MR `mr_id` (a registered MR, or a mapped
    // fast-register MR: offset from its BaseVirtualAddress), appending the buffer spans it
    // names; false when the MR cannot serve it (access: 0 read, 1 write, 2 read sink).
    bool sge_span(int64_t mr_id, int64_t pd, int64_t off, int64_t len, NDK_SGE &sge,
                  std::vector<Span> &spans, int access, Req &req);
    void judge(uint64_t id, const Req &req, NTSTATUS status);
    void fr_done(Req &req, bool success);
    void pump_events();

    // ops
    // exec's parts: the rules an op breaks on purpose, and the op itself.
    std::set<std::string> allowance(const Op &op);
    void dispatch(const Op &op);
    void op_knob(const Op &op);
    void op_query(const Op &op);
    void op_listen(const Op &op);
    void op_pause(const Op &op);
    void op_priv(const Op &op);
    void op_reg(const Op &op);
    void op_dereg(const Op &op);
    void op_frinit(const Op &op);
    void op_lamrel(const Op &op);
    void op_arm(const Op &op);
    void op_resize(const Op &op);
    void op_moder(const Op &op);
    void op_srq_mod(const Op &op);
    void op_flush(const Op &op);
    void op_disc(const Op &op);
    void op_conndata(const Op &op);
    void op_addr(const Op &op);
    void op_reset();
    void op_create(const Op &op);
    void op_post(const Op &op);
    // op_post's parts.  What every post on a QP shares: the QP, its handle, the op's flags
    // (SILENT_SUCCESS dropped where the queue has no room for it), the connected QP.
    struct QpPost {
        Obj &qp;
        std::shared_ptr<ndk::Qp> h;
        ULONG flags;
        Obj *peer;
    };
    // The remote side of a Read or Write: its spans, address and token.
    struct RdmaRemote {
        std::vector<Span> spans;
        uint64_t address = 0;
        uint32_t token = 0;
    };
    // The QP of a post and the checks of a conforming consumer (room in the queue and the
    // CQ, unless the op means to overpost or overrun); nullopt when the post is skipped.
    std::optional<QpPost> qp_post(const Op &op, Req &req);
    void post_srq_receive(const Op &op);
    void post_receive(const Op &op, Req req, QpPost &post);
    void post_send(const Op &op, Req req, QpPost &post); // NdkSend, NdkSendAndInvalidate, bad token
    void post_rdma(const Op &op, Req req, QpPost &post); // NdkRead, NdkWrite
    void post_bind(const Op &op, Req req, QpPost &post);
    void post_invalidate(const Op &op, Req req, QpPost &post);
    // The SGEs of a receive (up to 2) and of a send (inline from the scratch buffer, or MR
    // ranges); false when the op cannot be posted as a conforming consumer would.
    bool receive_sges(const Op &op, int64_t pd, NDK_SGE (&sge)[2], int &n,
                      std::vector<Span> &spans, Req &req);
    bool send_sges(const Op &op, const QpPost &post, bool inl, NDK_SGE (&sge)[2], int &n,
                   std::vector<Span> &spans, Req &req);
    // NdkSendAndInvalidate's token: a window bound on the peer or a fast-register MR it
    // mapped; 0 when there is none.
    uint32_t send_invalidate_token(const Op &op, const QpPost &post, Req &req);
    // The model after a send was posted: the peer's receives it takes, the MR it invalidates.
    void count_send(const Op &op, QpPost &post, uint32_t total, int64_t target);
    bool rdma_remote(const Op &op, Req &req, QpPost &post, RdmaRemote &remote);
    static bool overlaps(const std::vector<Span> &local, const std::vector<Span> &remote);
    void op_connect(const Op &op);
    void op_close(const Op &op);
    void op_lam(const Op &op);
    void op_fastreg(const Op &op, Req req, Obj &qp, ULONG flags);

    Config config_;
    std::vector<std::string> options_;
    std::vector<std::shared_ptr<ndk::Adapter>> ad_;
    std::vector<std::string> host_;
    std::vector<NDK_ADAPTER_INFO> info_;
    std::unordered_map<int64_t, Obj> objs_;
    std::map<int64_t, LamRec> lams_;
    std::set<int> no_lam_; // adapters whose NdkBuildLAM is STATUS_NOT_SUPPORTED (verbs: _NO_LAM)
    std::array<std::vector<int64_t>, static_cast<size_t>(Kind::Count)> live_;
    std::unordered_map<uint64_t, Req> out_;
    std::unordered_map<uint64_t, SendRec> sends_;
    // Why a send left sends_: "received by #N", or its completion status (for a failure's
    // message, when a receive names a send the model no longer expects).
    std::unordered_map<uint64_t, std::string> sends_gone_;
    // Sends that completed CANCELLED while their connection failed, on a provider whose
    // requests are in flight on a wire (not the in-process fabric): the peer may have taken one
    // before the connection failed, as a real RNIC flushes a request it sent but saw no answer
    // to (docs/walk.md, "In flight").  A receive naming one is checked as a delivered send.
    std::unordered_map<uint64_t, SendRec> maybe_delivered_;
    bool in_flight_on_a_wire() const;
    struct IssuedClose {
        ndk::Call call;
        const char *fn; // which NdkCloseXxx, for the failure's message
        uint64_t op;    // the operation that issued it
    };
    std::vector<IssuedClose> closes_; // every close issued: each must complete by the end
    std::vector<std::shared_ptr<ndk::Object>> closed_; // handles kept until the end
    std::shared_ptr<Buf> scratch_;   // INLINE sends read from here (never registered)
    const Op *current_ = nullptr;
    bool corrupt_pending_ = false;
    uint64_t checks_ = 0;
};

} // namespace walk
