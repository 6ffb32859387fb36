// The stress test's model: the byte pattern and its checks, slot layouts, request tables,
// credits, statistics and the failure record.
#include "stress.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <new>
#include <sstream>
#include <stdexcept>

namespace stress {

namespace {

constexpr const char *kOpNames[kOps] = {
    "send",           "send+solicit",     "send inline",   "send+invalidate", "write",
    "read",           "MW write",         "MW read",       "FR write",        "FR read",
    "bind",           "fast register",    "invalidate MW", "invalidate FR",   "receive (QP)",
    "receive (SRQ)", "read-only area",
};

constexpr const char *kFeatureNames[] = {"send", "solicit", "inline", "sendinv", "write",
                                         "read", "mw",      "fr",     "srq"};

} // namespace

const char *op_name(Op op) { return kOpNames[static_cast<size_t>(op)]; }

std::optional<unsigned> parse_features(const std::string &list)
{
    unsigned features = 0;
    std::stringstream in(list);
    std::string name;
    while (std::getline(in, name, ',')) {
        if (name == "all") {
            features |= kAllFeatures;
            continue;
        }
        bool known = false;
        for (size_t i = 0; i < std::size(kFeatureNames); ++i)
            if (name == kFeatureNames[i]) {
                features |= 1u << i;
                known = true;
            }
        if (!known)
            return std::nullopt;
    }
    return features;
}

std::string feature_names(unsigned features)
{
    std::string out;
    for (size_t i = 0; i < std::size(kFeatureNames); ++i)
        if (features & (1u << i))
            out += (out.empty() ? "" : ",") + std::string(kFeatureNames[i]);
    return out.empty() ? "none" : out;
}

uint64_t pattern_word(uint64_t id, uint64_t word)
{
    if (word == 0)
        return id;
    // murmur3's 64-bit finalizer over (id, word): every bit of both reaches every byte
    uint64_t h = id ^ (word * 0x9E3779B97F4A7C15ull);
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 33);
}

uint32_t length_of(uint64_t id, const Limits &limits)
{
    uint64_t h = pattern_word(id ^ 0x5A5A5A5A5A5A5A5Aull, 7);
    if (id::op(id) == Op::SendInline)
        return 8 + static_cast<uint32_t>(h % (limits.inline_size - 7));
    uint32_t cap = limits.max_size;
    switch ((h >> 56) % 8) {
    case 0:
    case 1:
    case 2:
    case 3: cap = std::min<uint32_t>(cap, 64); break;
    case 4:
    case 5:
    case 6: cap = std::min<uint32_t>(cap, 1024); break;
    default: break;
    }
    return 8 + static_cast<uint32_t>(h % (cap - 7));
}

namespace {

// The bytes of request `id` from stream offset `start` on, one at a time.
class PatternBytes {
public:
    PatternBytes(uint64_t id, uint64_t start)
        : id_(id), offset_(start), word_(pattern_word(id, start >> 3))
    {
    }
    uint8_t next()
    {
        auto byte = static_cast<uint8_t>(word_ >> ((offset_ & 7) * 8));
        if ((++offset_ & 7) == 0)
            word_ = pattern_word(id_, offset_ >> 3);
        return byte;
    }

private:
    uint64_t id_, offset_, word_;
};

void note(std::optional<Mismatch> &m, size_t at, uint8_t got, uint8_t want)
{
    if (!m)
        m = Mismatch{at, got, want, 0};
    ++m->count;
}

} // namespace

void fill(uint8_t *to, uint64_t id, uint64_t start, size_t n)
{
    PatternBytes bytes(id, start);
    for (size_t i = 0; i < n; ++i)
        to[i] = bytes.next();
}

std::optional<Mismatch> check(const uint8_t *at, uint64_t id, uint64_t start, size_t n)
{
    std::optional<Mismatch> m;
    PatternBytes bytes(id, start);
    for (size_t i = 0; i < n; ++i)
        if (uint8_t want = bytes.next(); at[i] != want) [[unlikely]]
            note(m, i, at[i], want);
    return m;
}

std::optional<Mismatch> check_poison(const uint8_t *at, size_t n)
{
    std::optional<Mismatch> m;
    for (size_t i = 0; i < n; ++i)
        if (at[i] != kPoison) [[unlikely]]
            note(m, i, at[i], kPoison);
    return m;
}

uint64_t Rng::next()
{
    // splitmix64: a seed per thread gives each its own sequence
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

Layout scatter(Rng &rng, uint32_t length, uint32_t max_pieces)
{
    Layout layout;
    uint32_t pieces = 1 + rng.below(std::min<uint32_t>({max_pieces, kMaxPieces, length}));
    // pieces - 1 distinct cuts in (0, length), in order
    std::array<uint32_t, kMaxPieces + 1> cut{};
    cut[pieces] = length;
    for (uint32_t i = 1; i < pieces; ++i) {
        uint32_t lo = cut[i - 1] + 1, hi = length - (pieces - i);
        cut[i] = lo + rng.below(hi - lo + 1);
    }
    uint32_t at = 0;
    for (uint32_t i = 0; i < pieces; ++i) {
        layout.pieces[i] = {at, cut[i + 1] - cut[i]};
        at += layout.pieces[i].length + kGap;
    }
    layout.count = pieces;
    return layout;
}

Memory Memory::allocate(size_t size)
{
    size = (size + 4095) / 4096 * 4096;
    auto *p = static_cast<uint8_t *>(::operator new(size, std::align_val_t{4096}));
    std::memset(p, kPoison, size);
    Memory m;
    m.bytes = std::shared_ptr<uint8_t>(p, [](uint8_t *q) { ::operator delete(q, std::align_val_t{4096}); });
    m.size = size;
    return m;
}

bool Pool::take()
{
    int64_t c = credits.load(std::memory_order_acquire);
    while (c > 0)
        if (credits.compare_exchange_weak(c, c - 1, std::memory_order_acq_rel))
            return true;
    return false;
}

uint64_t Table::add(const Req &req)
{
    if (free_.empty())
        throw std::logic_error("request table full: the run posts more than its queues hold");
    uint32_t slot = free_.back();
    free_.pop_back();
    if (++gen_ == 0)
        gen_ = 1;
    reqs_[slot] = req;
    reqs_[slot].gen = gen_;
    ++outstanding_;
    return uint64_t(index + 1) << 48 | uint64_t{slot} << 32 | gen_;
}

Req *Table::find(uint64_t context)
{
    uint64_t slot = (context >> 32) & 0xFFFF;
    auto gen = static_cast<uint32_t>(context);
    if (slot >= reqs_.size() || gen == 0 || reqs_[slot].gen != gen)
        return nullptr;
    return &reqs_[slot];
}

void Table::release(uint64_t context)
{
    Req *req = find(context);
    if (req == nullptr)
        return;
    req->gen = 0;
    free_.push_back(static_cast<uint32_t>((context >> 32) & 0xFFFF));
    --outstanding_;
}

void Stats::add(const Stats &other)
{
    for (size_t i = 0; i < kOps; ++i) {
        ops[i].posted += other.ops[i].posted;
        ops[i].completed += other.ops[i].completed;
        ops[i].bytes += other.ops[i].bytes;
    }
    receive_invalidates += other.receive_invalidates;
    arms += other.arms;
    notifications += other.notifications;
}

void Run::fail(const std::string &message)
{
    stop.store(true);
    ++failures_;
    std::lock_guard lock(mu_);
    if (first_.size() < 20)
        first_.push_back(message);
}

std::vector<std::string> Run::first_failures() const
{
    std::lock_guard lock(mu_);
    return first_;
}

std::string End::name() const
{
    return "connection " + std::to_string(connection->index) + (side == 0 ? " A" : " B");
}

std::string hex(uint64_t value)
{
    char text[24];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
    return text;
}

} // namespace stress
