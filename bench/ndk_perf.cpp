// ndk_perf: the timing engine behind `ndk perf` and bench/compare.  Each test runs a tight loop
// through the raw NDK ABI (bench/raw_support.hpp) on two adapters of --provider P (soft by
// default; any provider ndk::Provider::load loads, as the rest of the harness loads it: soft,
// soft:tcp, soft:shm, loop, verbs:DEV, a path to a .so) in this process and prints one JSON
// object on stdout; the Python front end (python/ndk/perf.py) formats it in
// the manner of perftest.  Python is never inside a timed loop.
//
//   ndk_perf send_lat|write_lat|read_lat [--size N] [--iters N] [--warmup N]
//            [--threads | --processes] [--progress auto|manual] [--seconds N] [--samples FILE]
//            [--poll spin|yield]
//       latency samples (one clock read per iteration): min, median, avg, p99, p99.9 in us;
//       --samples writes every sample to FILE, in ns, one per line, in the order measured
//       (what `ndk perf --plot` draws).
//       send_lat is a ping-pong, a sample is half its round trip; --threads runs the pong
//       side on its own thread, both busy-polling (as two perftest processes would); without
//       it one thread drives both sides (the provider's cost alone); --processes runs the pong
//       in a child process (needs a provider that reaches another process: soft:shm, soft:tcp,
//       verbs:DEV; soft's inproc transport and loop are refused: process_pingpong.hpp).
//       --seconds bounds the run (the warm-up to a tenth of it, the samples to the rest): two busy-polling threads
//       on loaded cores can take milliseconds a round trip, and a bounded run still gives
//       the percentiles of the samples it took (their count is in the output).
//   ndk_perf cacheline [--iters N] [--warmup N] [--seconds N] [--samples FILE]
//       the physical limit of send_lat --threads: one atomic word in its own cache line
//       bounced between two busy-waiting threads, no provider; a sample is half a round trip,
//       clocked as send_lat clocks it, so the two compare as they stand.
//   ndk_perf msg_rate [--connections N] [--size N] [--batch N] [--iters N]
//       message rate: N connections between the same two adapters, each connection's QP
//       pair driven by its own thread, which posts `batch` RDMA writes and polls them, over
//       and over; aggregate and per-connection Mops/s.  --connections 1 against 2 is how
//       far the provider scales with threads (two connections should never contend).
//   ndk_perf send_bw|write_bw|read_bw [--size N] [--iters N] [--inflight N] [--processes]
//            [--poll spin|yield]
//       perftest's loop (ib_write_bw's run_iter_bw): `inflight` requests outstanding (its
//       tx_depth), the next posted as each completion arrives, exactly --iters requests
//       timed after an untimed round of `inflight`; peak and average bandwidth in MB/s
//       (10^6) and GB/s, message rate in Mpps, computed as perftest's BW peak and BW average
//       (see BandwidthLoop, and the end of --help).  write_bw and read_bw --processes: the
//       target memory in a child process, which only waits (a provider that reaches one, as
//       above).
//   send_lat and the bandwidth tests take --poll: spin on NdkGetCqResultsEx (the default, as
//   perftest), or yield the core after each empty poll, so that a provider whose transfers
//   run on its own threads (soft's shm and tcp transports) gets the cores a spinning loop
//   would take (raw_support.hpp, poll_yields).
//   ndk_perf memcpy [--size N] [--iters N] [--offset N]
//       the baseline: memcpy between two page-aligned buffers (+offset bytes), GB/s.
//   ndk_perf cma [--size N] [--iters N]
//       the floor of cross-memory attach on this kernel: a bare process_vm_writev loop moving
//       --size bytes from this process into a page-aligned buffer of a child process, GB/s
//       (what a provider pays to move a buffer its peer process cannot map).
//   write_bw and read_bw --processes --zero-copy: both processes' registered buffers in memory
//       the other process can map (ndk/shared_memory.hpp, `ndk.alloc` in Python); soft's shm
//       transport then copies through a mapping with memcpy instead of cross-memory attach
//       (docs/transport.md, "Zero-copy").  A provider that does not map them moves the bytes
//       as it moves any others.
//   Every connection asks for the adapter's maximum read limits (raw_support.hpp,
//   RawAdapter::read_limits), as perftest's ib_read_bw keeps the device's maximum of Reads
//   outstanding unless -o says otherwise, so read_bw has as many Reads in flight as the
//   provider allows.
//   ndk_perf poll_rate [--batch N] [--count N] [--iters N]
//       a CQ filled with `count` write completions, drained by NdkGetCqResultsEx in batches:
//       completions per second (polling only), and post+poll per completion.
//   ndk_perf create_close [--iters N]
//       create + close of a CQ, PD, MR (and MW, SRQ, QP, connector), inline: ns per pair.
//   ndk_perf scale [--mrs N] [--qps N] [--cq-depth N] [--cq-fill N] [--what mrs,qps,cq]
//       N registered MRs, N QPs, one deep CQ (filled with `cq-fill` results): the time and the
//       resident memory (RSS delta) per object.  Run one `--what` per process for clean RSS
//       deltas (memory freed by an earlier part is reused by a later one).
//
// Every test that opens adapters also takes --options KNOBS: knob lines ("key=value", ';'
// between them) for each adapter it opens, given at CreateMiniport, e.g. "transport=shm" to
// measure a transport other than the default.  A provider that refuses one fails the run
// (exit 2) with its own reason on stderr, which is what bench/compare prints for the row.
// The address and progress knobs are ndk_perf's (each adapter has its own address, of
// 127.0.0.0/8 with transport=tcp, whose addresses must be this host's, or the one the
// provider reports, or --addresses CLIENT,SERVER: AdapterOptions::address; progress is
// --progress, set once connected).  A provider that does not load, or whose adapter does not
// open with these knobs and addresses, is one line on stderr and exit code 2 before any
// test runs (provider_problem), as is --processes with a provider that reaches only its own
// process.
//
// `ndk_perf --help` lists every test's options with their ranges.  Each value is checked
// whole before anything runs (see "arguments" below): a bad one, an unknown option or a missing
// value is one line on stderr naming the argument and its valid range, and exit code 2.
#include "process_pingpong.hpp"
#include "raw_support.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <sstream>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace ndkbench;
using Clock = std::chrono::steady_clock;

namespace {

// ---- arguments ------------------------------------------------------------------------------
// Every option of every test, with its range: the parser checks each value whole (digits only,
// no sign, no suffix, no wrap) against it, and `ndk_perf --help` prints the table.  A bad
// argument is one line on stderr naming it and its valid range, exit code 2 (as argparse).
// python/ndk/perf.py checks the same ranges before it starts this helper (its *_RANGE).

constexpr uint64_t kMaxTransfer = uint64_t{1} << 30; // the soft provider's MaxTransferLength
constexpr uint64_t kMaxCqDepth = uint64_t{1} << 22;  // its MaxCqDepth
constexpr uint64_t kMaxIters = 100000000;

struct Option {
    enum Kind { Number, Flag, Choice, Parts, Text } kind;
    const char *name;
    uint64_t lo = 0, hi = 0;
    const char *choices = ""; // Choice: "auto|manual"; Parts: "mrs,qps,cq"; Text: "FILE"
    const char *note = "";
};

Option size_option(uint64_t hi = kMaxTransfer) { return {Option::Number, "size", 1, hi}; }
Option iters_option(uint64_t lo = 1, const char *note = "")
{
    return {Option::Number, "iters", lo, kMaxIters, "", note};
}
// Knob lines for every adapter the test opens (see the top of this file).
Option knobs_option()
{
    return {Option::Text, "options", 0, 0, "KNOBS", "key=value;... for each adapter"};
}

// Every test that opens adapters (it takes --options) also takes the provider to open them
// with and their addresses (AdapterOptions).
std::vector<std::pair<std::string, std::vector<Option>>>
with_provider(std::vector<std::pair<std::string, std::vector<Option>>> tests)
{
    for (auto &[test, options] : tests)
        if (std::any_of(options.begin(), options.end(),
                        [](const Option &o) { return std::string(o.name) == "options"; })) {
            options.push_back({Option::Text, "provider", 0, 0, "P",
                               "soft, soft:tcp, soft:shm, loop, verbs:DEV, a .so; default soft"});
            options.push_back({Option::Text, "addresses", 0, 0, "CLIENT,SERVER",
                               "two IPv4; default: chosen per provider"});
        }
    return tests;
}

const std::vector<std::pair<std::string, std::vector<Option>>> &test_options()
{
    static const Option warmup = {Option::Number, "warmup", 0, kMaxIters};
    static const Option seconds = {Option::Number, "seconds", 0, 3600, "", "0: no limit"};
    static const Option samples = {Option::Text, "samples", 0, 0, "FILE"};
    static const std::vector<Option> latency = {
        size_option(), iters_option(), warmup, {Option::Choice, "progress", 0, 0, "auto|manual"},
        seconds, samples, knobs_option()};
    static const Option poll = {Option::Choice, "poll", 0, 0, "spin|yield",
                                "yield: after each empty poll"};
    static const std::vector<Option> bandwidth = {
        size_option(), iters_option(), {Option::Number, "inflight", 1, 1024}, poll,
        knobs_option()};
    static std::vector<Option> one_sided_bandwidth = [] { // write_bw, read_bw
        std::vector<Option> v = bandwidth;
        v.insert(v.begin() + 3, {Option::Flag, "processes"});
        v.insert(v.begin() + 4, {Option::Flag, "zero-copy", 0, 0, "", "with --processes"});
        return v;
    }();
    static std::vector<Option> send_latency = [] {
        std::vector<Option> v = latency;
        v.insert(v.begin() + 3, {Option::Flag, "threads"});
        v.insert(v.begin() + 4, {Option::Flag, "processes"});
        v.insert(v.end() - 1, poll);
        return v;
    }();
    static const std::vector<std::pair<std::string, std::vector<Option>>> tests = with_provider({
        {"send_lat", send_latency},
        {"write_lat", latency},
        {"read_lat", latency},
        {"cacheline", {iters_option(), warmup, seconds, samples}},
        {"send_bw", bandwidth},
        {"write_bw", one_sided_bandwidth},
        {"read_bw", one_sided_bandwidth},
        // A thread per connection: past the cores it measures the scheduler, hence the cap.
        {"msg_rate",
         {{Option::Number, "connections", 1, 64}, size_option(),
          {Option::Number, "batch", 1, 1024, "", "at most the queue depth, 1024"},
          iters_option(1, "writes per connection"), knobs_option()}},
        {"memcpy",
         {size_option(uint64_t{1} << 32), iters_option(0, "0: about 4 GiB copied"),
          {Option::Number, "offset", 0, 4095}}},
        {"cma", {size_option(), iters_option(0, "0: about 4 GiB moved")}},
        {"poll_rate",
         {{Option::Number, "batch", 1, kMaxCqDepth}, {Option::Number, "count", 1, kMaxCqDepth},
          iters_option(), knobs_option()}},
        {"create_close", {iters_option(), knobs_option()}},
        {"scale",
         {{Option::Number, "mrs", 1, 10000000}, {Option::Number, "qps", 1, 1000000},
          {Option::Number, "cq-depth", 1, kMaxCqDepth},
          {Option::Number, "cq-fill", 0, kMaxCqDepth, "", "at most --cq-depth"},
          {Option::Parts, "what", 0, 0, "mrs,qps,cq"}, knobs_option()}},
    });
    return tests;
}

std::string describe(const Option &o)
{
    std::string note = *o.note ? std::string(" (") + o.note + ")" : "";
    switch (o.kind) {
    case Option::Number:
        return "--" + std::string(o.name) + " " + std::to_string(o.lo) + ".." +
               std::to_string(o.hi) + note;
    case Option::Flag:
        return "--" + std::string(o.name) + note;
    case Option::Choice:
        return "--" + std::string(o.name) + " " + o.choices + note;
    case Option::Parts:
        return "--" + std::string(o.name) + " {" + o.choices + "},..." + note;
    case Option::Text:
        return "--" + std::string(o.name) + " " + o.choices + note;
    }
    return "";
}

std::string usage()
{
    std::string text = "usage: ndk_perf TEST [--OPTION VALUE | --OPTION=VALUE]...\n"
                       "tests and their options (whole numbers in the ranges shown):\n";
    for (const auto &[test, options] : test_options()) {
        std::string line = "  " + test + std::string(14 - test.size(), ' ');
        for (const Option &o : options) {
            std::string part = "[" + describe(o) + "]";
            if (line.size() + part.size() > 98) {
                line.pop_back(); // the space after the last part
                text += line + "\n";
                line = std::string(16, ' ');
            }
            line += part + " ";
        }
        line.pop_back();
        text += line + "\n";
    }
    text += "every connection asks for the adapter's maximum read limits (NdkQueryAdapterInfo's\n"
            "MaxInboundReadLimit and MaxOutboundReadLimit), as ib_read_bw keeps the device's\n"
            "maximum of Reads outstanding unless -o says otherwise; the provider grants what\n"
            "both ends allow\n"
            "the bandwidth tests keep --inflight requests outstanding, posting the next as each\n"
            "completion arrives (perftest's tx_depth), every request signalled; after an untimed\n"
            "round of --inflight requests, exactly --iters are timed.  As perftest's BW average:\n"
            "iters x size over the time from the first post to the last completion; as its BW\n"
            "peak: size over the least (completed[j] - posted[i]) / (j - i + 1), the shortest\n"
            "time a request over any run of consecutive requests i..j\n";
    return text;
}

// A usage error: main() prints "ndk_perf TEST: MESSAGE" and exits 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string range_text(const Option &o)
{
    return std::to_string(o.lo) + ".." + std::to_string(o.hi);
}

// The whole of `text` as a number of o's range: digits only, no overflow.
uint64_t parse_number(const Option &o, const std::string &text)
{
    std::string where = "argument --" + std::string(o.name) + ": ";
    bool negative = text.size() > 1 && text[0] == '-' &&
                    text.find_first_not_of("0123456789", 1) == std::string::npos;
    if (negative)
        throw UsageError(where + text + " is out of range (valid: " + range_text(o) + ")");
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        throw UsageError(where + "'" + text + "' is not a whole number (valid: " +
                         range_text(o) + ")");
    uint64_t value = 0;
    bool too_large = false;
    for (char c : text) {
        auto digit = static_cast<uint64_t>(c - '0');
        if (value > (UINT64_MAX - digit) / 10) {
            too_large = true;
            break;
        }
        value = value * 10 + digit;
    }
    if (too_large || value < o.lo || value > o.hi)
        throw UsageError(where + text + " is out of range (valid: " + range_text(o) + ")");
    return value;
}

// `item` is one of the `sep`-separated words of `list`.
bool in_list(const std::string &item, const std::string &list, char sep)
{
    std::string s(1, sep);
    return !item.empty() && item.find(sep) == std::string::npos &&
           (s + list + s).find(s + item + s) != std::string::npos;
}

struct Args {
    std::string test;
    std::map<std::string, uint64_t> numbers;
    std::map<std::string, std::string> values;
    bool flag(const std::string &k) const { return values.count(k) != 0; }
    uint64_t num(const std::string &k, uint64_t def) const
    {
        auto it = numbers.find(k);
        return it == numbers.end() ? def : it->second;
    }
    std::string str(const std::string &k, const std::string &def) const
    {
        auto it = values.find(k);
        return it == values.end() ? def : it->second;
    }
};

// argv[first..] against the options of args.test (which must be known); throws UsageError.
void parse_options(Args &args, int argc, char **argv, int first)
{
    const std::vector<Option> *options = nullptr;
    std::string names;
    for (const auto &[test, list] : test_options()) {
        if (test == args.test)
            options = &list;
        names += (names.empty() ? "" : " ") + test;
    }
    if (options == nullptr)
        throw UsageError("unknown test '" + args.test + "' (tests: " + names + ")");
    for (int i = first; i < argc; ++i) {
        std::string word = argv[i];
        if (word.rfind("--", 0) != 0 || word.size() == 2)
            throw UsageError("unexpected argument '" + word + "' (options start with --)");
        std::string name = word.substr(2), value;
        size_t eq = name.find('=');
        bool inline_value = eq != std::string::npos;
        if (inline_value) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
        }
        auto o = std::find_if(options->begin(), options->end(),
                              [&](const Option &x) { return name == x.name; });
        if (o == options->end()) {
            std::string known;
            for (const Option &x : *options)
                known += " --" + std::string(x.name);
            throw UsageError("unknown option --" + name + " (" + args.test + " takes" + known +
                             ")");
        }
        std::string where = "argument --" + name + ": ";
        if (o->kind == Option::Flag) {
            if (inline_value)
                throw UsageError(where + "takes no value");
            args.values[name] = "1";
            continue;
        }
        if (!inline_value) {
            // A following option is not a value (argparse's rule); "-5" is one, and wrong.
            if (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0)
                throw UsageError(where + "expected a value (" + describe(*o) + ")");
            value = argv[++i];
        }
        switch (o->kind) {
        case Option::Number:
            args.numbers[name] = parse_number(*o, value);
            break;
        case Option::Choice:
        case Option::Parts: {
            bool ok = o->kind == Option::Choice ? in_list(value, o->choices, '|') : !value.empty();
            for (size_t start = 0; ok && o->kind == Option::Parts && start <= value.size();) {
                size_t end = std::min(value.find(',', start), value.size());
                ok = in_list(value.substr(start, end - start), o->choices, ',');
                start = end + 1;
            }
            if (!ok)
                throw UsageError(where + "'" + value + "' is not " +
                                 (o->kind == Option::Choice ? "one of " : "a list of ") +
                                 o->choices);
            args.values[name] = value;
            break;
        }
        case Option::Text:
            if (value.empty())
                throw UsageError(where + "expected a value (" + describe(*o) + ")");
            args.values[name] = value;
            break;
        case Option::Flag:
            break;
        }
    }
    // --addresses: two IPv4 addresses (client, server) the provider's adapters take.
    if (std::string text = args.str("addresses", ""); !text.empty()) {
        size_t comma = text.find(',');
        in_addr parsed{};
        bool ok = comma != std::string::npos && text.find(',', comma + 1) == std::string::npos &&
                  inet_pton(AF_INET, text.substr(0, comma).c_str(), &parsed) == 1 &&
                  inet_pton(AF_INET, text.substr(comma + 1).c_str(), &parsed) == 1;
        if (!ok)
            throw UsageError("argument --addresses: '" + text +
                             "' is not CLIENT,SERVER (two IPv4 addresses)");
    }
    // Checks across options.
    if (args.num("cq-fill", 0) > args.num("cq-depth", kMaxCqDepth))
        throw UsageError("argument --cq-fill: " + std::to_string(args.num("cq-fill", 0)) +
                         " is more than --cq-depth " +
                         std::to_string(args.num("cq-depth", kMaxCqDepth)));
    if (args.flag("threads") && args.str("progress", "auto") == "manual")
        throw UsageError("--threads with --progress manual: step from one thread only");
    // --options leaves ndk_perf its own knobs: each adapter's address, and progress (manual
    // progress before the connection is made would never complete it).
    std::string knobs = args.str("options", "");
    for (size_t start = 0; start < knobs.size();) {
        size_t end = std::min(knobs.find_first_of(";\n", start), knobs.size());
        std::string key = knobs.substr(start, end - start);
        key = key.substr(0, key.find('='));
        key.erase(0, std::min(key.find_first_not_of(" \t"), key.size()));
        key.erase(key.find_last_not_of(" \t") + 1);
        if (key == "address" || key == "progress")
            throw UsageError("argument --options: " + key + " is ndk_perf's to set (" +
                             (key == "address" ? "each adapter has its own"
                                               : "--progress, where the test has it") +
                             ")");
        start = end + 1;
    }
}

double ns_between(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double, std::nano>(b - a).count();
}

// A small JSON writer: flat objects of numbers and strings, nested objects by hand.
class Json {
public:
    Json &num(const std::string &k, double v)
    {
        sep();
        std::ostringstream o;
        o.precision(6);
        if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
            o << static_cast<long long>(v);
        else if (std::isfinite(v))
            o << v;
        else
            o << "null";
        out_ += "\"" + k + "\": " + o.str();
        return *this;
    }
    Json &str(const std::string &k, const std::string &v)
    {
        sep();
        out_ += "\"" + k + "\": \"";
        for (char c : v) { // --options is the user's text: quotes, backslashes, newlines
            if (c == '"' || c == '\\')
                out_ += std::string("\\") + c;
            else if (static_cast<unsigned char>(c) < 0x20)
                out_ += "\\u00" + std::string(1, "0123456789abcdef"[c >> 4]) +
                        "0123456789abcdef"[c & 15];
            else
                out_ += c;
        }
        out_ += "\"";
        return *this;
    }
    Json &raw(const std::string &k, const std::string &v)
    {
        sep();
        out_ += "\"" + k + "\": " + v;
        return *this;
    }
    std::string text() const { return "{" + out_ + "}"; }

private:
    void sep()
    {
        if (!out_.empty())
            out_ += ", ";
    }
    std::string out_;
};

std::string latency_stats(std::vector<double> ns)
{
    std::sort(ns.begin(), ns.end());
    auto at = [&](double q) {
        size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(ns.size()))) - 1;
        return ns[std::min(i, ns.size() - 1)] / 1000.0;
    };
    double sum = 0;
    for (double v : ns)
        sum += v;
    double mean = sum / static_cast<double>(ns.size()), squares = 0;
    for (double v : ns)
        squares += (v - mean) * (v - mean);
    return Json()
        .num("samples", static_cast<double>(ns.size()))
        .num("min_us", ns.front() / 1000.0)
        .num("median_us", at(0.5))
        .num("avg_us", sum / static_cast<double>(ns.size()) / 1000.0)
        .num("p99_us", at(0.99))
        .num("p999_us", at(0.999))
        .num("max_us", ns.back() / 1000.0)
        .num("stdev_us", std::sqrt(squares / static_cast<double>(ns.size())) / 1000.0)
        .text();
}

// --samples FILE: every latency sample, in ns, one per line (after the timed loop).
void write_samples(const Args &args, const std::vector<double> &ns)
{
    std::string path = args.str("samples", "");
    if (path.empty())
        return;
    std::FILE *f = std::fopen(path.c_str(), "w");
    if (f == nullptr)
        throw std::runtime_error("cannot write " + path);
    for (double v : ns)
        std::fprintf(f, "%.1f\n", v);
    if (std::fclose(f) != 0)
        throw std::runtime_error("cannot write " + path);
}

void check(NTSTATUS s, const char *what)
{
    if (s != STATUS_SUCCESS)
        fail(what, s);
}

// The adapters a test opens: --provider, --addresses, and the knob lines --options and, for
// --progress manual, progress=manual (a Pair sets it once connected).
AdapterOptions adapters(const Args &a)
{
    return AdapterOptions(a.str("options", "") +
                              (a.str("progress", "auto") == "manual" ? "\nprogress=manual" : ""),
                          a.str("provider", "soft"), a.str("addresses", ""));
}

// The clock of a latency loop: one read per iteration (tick), the time since the previous
// read one sample (divided by `per_sample`: 2 for half a round trip).  First the warm-up,
// unsampled: --warmup iterations (default a tenth of --iters, plus 100), or a tenth of
// --seconds if that ends first; then --iters samples, or fewer if --seconds ends first.
class LatencyLoop {
public:
    LatencyLoop(const Args &args, uint64_t iters, double per_sample)
        : iters_(iters), warmup_(args.num("warmup", iters / 10 + 100)), per_sample_(per_sample)
    {
        samples_.reserve(iters);
        last_ = Clock::now(); // the first iteration starts here
        if (uint64_t seconds = args.num("seconds", 0); seconds != 0) {
            warm_until_ = last_ + std::chrono::milliseconds(seconds * 100);
            stop_ = last_ + std::chrono::seconds(seconds);
        }
    }
    // Another iteration is wanted.
    bool more() const { return samples_.size() < iters_ && last_ < stop_; }
    // An iteration ended.
    void tick()
    {
        auto now = Clock::now();
        if (warmed_ >= warmup_ || now >= warm_until_)
            samples_.push_back(ns_between(last_, now) / per_sample_);
        else
            ++warmed_;
        last_ = now;
    }
    // The samples; at least one, or the loop ran out of --seconds in its warm-up.
    const std::vector<double> &samples() const
    {
        if (samples_.empty())
            throw std::runtime_error("no sample within --seconds (the warm-up took them)");
        return samples_;
    }

private:
    uint64_t iters_, warmup_, warmed_ = 0;
    double per_sample_;
    Clock::time_point last_;
    Clock::time_point warm_until_ = Clock::time_point::max(), stop_ = Clock::time_point::max();
    std::vector<double> samples_;
};

// ---- latency --------------------------------------------------------------------------------

// The ping of send_lat's two-sided modes (--threads, --processes): a send, its completion and
// the pong's reply, the receive posted again; a sample a round trip.  `last_ping(i)` runs
// before the final ping, the i-th, untimed: it tells the pong to stop once it has answered.
std::vector<double> ping(const Args &args, uint64_t iters, NDK_QP *qa, NDK_CQ *ca, NDK_SGE &s_a,
                         NDK_SGE &r_a, const std::function<void(uint64_t)> &last_ping)
{
    LatencyLoop loop(args, iters, 2);
    Completions completions(ca); // the Send's and the answer's, in either order
    for (uint64_t i = 0;; ++i) {
        bool last = !loop.more();
        if (last)
            last_ping(i);
        check(qa->Dispatch->NdkSend(qa, nullptr, &s_a, 1, 0), "NdkSend");
        completions.take(NdkOperationTypeSend);
        completions.take(NdkOperationTypeReceive);
        check(qa->Dispatch->NdkReceive(qa, nullptr, &r_a, 1), "NdkReceive");
        if (last)
            break;
        loop.tick();
    }
    return loop.samples();
}

// --processes: the provider reaches a child process (or is not known not to).
AdapterOptions process_options(const Args &args)
{
    AdapterOptions options = adapters(args);
    if (std::string why = options.cannot_reach_other_processes(); !why.empty())
        throw UsageError("--processes needs a provider that reaches another process: " + why);
    return options;
}

// send_lat --processes: the pong in a child process (process_pingpong.hpp).
std::vector<double> send_lat_processes(const Args &args, ULONG size, uint64_t iters)
{
    AdapterOptions options = process_options(args);
    if (args.str("progress", "auto") == "manual")
        throw UsageError("--processes with --progress manual: the pong's engine is not ours");
    if (args.flag("threads"))
        throw UsageError("--processes with --threads: the pong is in one place");
    std::vector<double> samples;
    ProcessPeer pong(options, size, ProcessPeer::Role::pong);
    pong.run([&](ProcessPeer::Connected &c) {
        NDK_SGE s_a = c.send.sge(0, size), r_a = c.receive.sge(0, size);
        // The pong answers the stop byte and exits (the buffer starts 0x5a, never kStop).
        samples = ping(args, iters, c.qp, c.cq, s_a, r_a,
                       [&c](uint64_t) { c.send.bytes[0] = ProcessPeer::kStop; });
    });
    return samples;
}

// send_lat in this process: one thread driving both sides, or the pong on its own thread.
std::vector<double> send_lat_here(const Args &args, ULONG size, uint64_t iters)
{
    bool threads = args.flag("threads");
    bool manual = args.str("progress", "auto") == "manual";
    Pair pair(4096, 1024, adapters(args));
    Region sa(pair.client(), pair.a().pd, size), ra(pair.client(), pair.a().pd, size);
    Region sb(pair.server(), pair.b().pd, size), rb(pair.server(), pair.b().pd, size);
    NDK_QP *qa = pair.a().qp, *qb = pair.b().qp;
    NDK_CQ *ca = pair.a().cq, *cb = pair.b().cq;
    NDK_SGE s_a = sa.sge(0, size), r_a = ra.sge(0, size), s_b = sb.sge(0, size),
            r_b = rb.sge(0, size);
    check(qa->Dispatch->NdkReceive(qa, nullptr, &r_a, 1), "NdkReceive");
    check(qb->Dispatch->NdkReceive(qb, nullptr, &r_b, 1), "NdkReceive");
    std::vector<double> samples;
    if (!threads) {
        // Auto progress: A's send completes inside NdkSend, so A's CQ holds [send, receive]
        // after B's reply, and B's CQ [receive] then [send].  Every result is polled inside
        // the timed loop (one clock read per iteration).
        NDK_RESULT_EX r[2];
        LatencyLoop loop(args, iters, 2);
        while (loop.more()) {
            check(qa->Dispatch->NdkSend(qa, nullptr, &s_a, 1, 0), "NdkSend");
            if (manual)
                pair.client().step(1);
            poll_n(cb, r, 1);
            check(qb->Dispatch->NdkReceive(qb, nullptr, &r_b, 1), "NdkReceive");
            check(qb->Dispatch->NdkSend(qb, nullptr, &s_b, 1, 0), "NdkSend");
            if (manual)
                pair.server().step(1);
            poll_n(ca, r, 2);
            check(qa->Dispatch->NdkReceive(qa, nullptr, &r_a, 1), "NdkReceive");
            poll_n(cb, r, 1);
            loop.tick();
        }
        samples = loop.samples();
    } else {
        // The pong answers `pings` pings.  When the loop wants no more, the ping sets it to
        // the count with one last ping, untimed, before sending that ping: the pong reads it
        // after answering (the transfer orders the two), so it never waits for a ping that
        // will not come.
        std::atomic<uint64_t> pings{UINT64_MAX};
        std::thread pong([&] {
            Completions completions(cb); // the next ping may come before our Send completes
            for (uint64_t i = 0; i < pings.load(std::memory_order_acquire); ++i) {
                completions.take(NdkOperationTypeReceive);
                check(qb->Dispatch->NdkReceive(qb, nullptr, &r_b, 1), "NdkReceive");
                check(qb->Dispatch->NdkSend(qb, nullptr, &s_b, 1, 0), "NdkSend");
                completions.take(NdkOperationTypeSend);
            }
        });
        samples = ping(args, iters, qa, ca, s_a, r_a,
                       [&pings](uint64_t i) { pings.store(i + 1, std::memory_order_release); });
        pong.join();
    }
    return samples;
}

std::string send_lat(const Args &args)
{
    auto size = static_cast<ULONG>(args.num("size", 64));
    uint64_t iters = args.num("iters", 100000);
    bool threads = args.flag("threads");
    bool manual = args.str("progress", "auto") == "manual";
    if (manual && threads)
        throw std::runtime_error("--threads with --progress manual: step from one thread only");
    bool processes = args.flag("processes");
    std::vector<double> samples = processes ? send_lat_processes(args, size, iters)
                                            : send_lat_here(args, size, iters);
    write_samples(args, samples);
    return Json()
        .str("test", "send_lat")
        .num("size", size)
        .num("iters", static_cast<double>(iters))
        .str("mode", processes ? "processes" : threads ? "threads" : "one_thread")
        .str("progress", manual ? "manual" : "auto")
        .str("poll", args.str("poll", "spin"))
        .str("provider", args.str("provider", "soft"))
        .str("options", args.str("options", ""))
        .str("sample", "half round trip")
        .raw("latency", latency_stats(samples))
        .text();
}

std::string rdma_lat(const Args &args, bool read)
{
    auto size = static_cast<ULONG>(args.num("size", 64));
    uint64_t iters = args.num("iters", 100000);
    bool manual = args.str("progress", "auto") == "manual";
    Pair pair(4096, 1024, adapters(args));
    Region local(pair.client(), pair.a().pd, size), remote(pair.server(), pair.b().pd, size);
    NDK_QP *qa = pair.a().qp;
    NDK_SGE s = local.sge(0, size);
    NDK_RESULT_EX r[1];
    LatencyLoop loop(args, iters, 1);
    while (loop.more()) {
        check(read ? qa->Dispatch->NdkRead(qa, nullptr, &s, 1, remote.address(), remote.remote, 0)
                   : qa->Dispatch->NdkWrite(qa, nullptr, &s, 1, remote.address(), remote.remote,
                                            0),
              "post");
        if (manual)
            pair.client().step(1);
        poll_n(pair.a().cq, r, 1);
        loop.tick();
    }
    write_samples(args, loop.samples());
    return Json()
        .str("test", read ? "read_lat" : "write_lat")
        .num("size", size)
        .num("iters", static_cast<double>(iters))
        .str("mode", "one_thread")
        .str("progress", manual ? "manual" : "auto")
        .str("provider", args.str("provider", "soft"))
        .str("options", args.str("options", ""))
        .str("sample", "post to completion polled")
        .raw("latency", latency_stats(loop.samples()))
        .text();
}

// The floor under send_lat --threads: what two busy-waiting threads take to hand one cache
// line back and forth, with no provider in between.  The ping writes an odd number into the
// word and waits for the next even one, which the pong writes on seeing it; a plain load in
// the wait (no pause, no yield), as the send_lat threads poll.
std::string cacheline(const Args &args)
{
    uint64_t iters = args.num("iters", 1000000);
    constexpr uint64_t kStop = UINT64_MAX; // the ping's last word: the pong returns
    struct alignas(64) Line {
        std::atomic<uint64_t> word{0};
    };
    static_assert(sizeof(Line) == 64, "the word alone in its cache line");
    auto line = std::make_unique<Line>(); // heap: aligned, and nothing else on its line
    std::atomic<uint64_t> &word = line->word;
    std::thread pong([&] {
        for (uint64_t ping = 1;; ping += 2) {
            uint64_t v;
            while ((v = word.load(std::memory_order_acquire)) != ping && v != kStop) {
            }
            if (v == kStop)
                return;
            word.store(ping + 1, std::memory_order_release);
        }
    });
    LatencyLoop loop(args, iters, 2);
    for (uint64_t ping = 1; loop.more(); ping += 2) {
        word.store(ping, std::memory_order_release);
        while (word.load(std::memory_order_acquire) != ping + 1) {
        }
        loop.tick();
    }
    word.store(kStop, std::memory_order_release);
    pong.join();
    write_samples(args, loop.samples());
    return Json()
        .str("test", "cacheline")
        .num("iters", static_cast<double>(iters))
        .str("mode", "threads")
        .str("sample", "half round trip")
        .raw("latency", latency_stats(loop.samples()))
        .text();
}

// ---- bandwidth ------------------------------------------------------------------------------

// The bandwidth loop, perftest's run_iter_bw: up to `inflight` requests outstanding (its
// tx_depth), a new one posted as soon as a completion leaves room, every request signalled
// (a cq_mod of 1, perftest's default above 8 KiB; below, its default cq_mod of 100 posts in
// bursts), completions polled 16 at a time (its CTX_POLL_BATCH), until exactly
// `iters` requests completed.  The time before each post and the time each completion was
// polled are kept (16 bytes a request), and after one untimed round of `inflight` requests
// that warms the caches and the allocator the figures are perftest's (print_report_bw):
// average = iters requests over the time from the first post to the last completion; peak =
// one request over the shortest time a request took in any run of consecutive requests i..j,
// (completed[j] - posted[i]) / (j - i + 1), so never below the average (perftest searches
// all pairs and leaves the peak out above 20000 requests; shortest_ns_a_request is
// O(n log n)).  send_bw's receives are posted on `qb`, each before its Send, and polled from
// `cb`.
struct BandwidthRun {
    double peak_ns = 0;  // the shortest time a request, over a run of consecutive requests
    double total_ns = 0; // from the first post to the last completion
};

// min over i <= j of (completed[j] - posted[i]) / (j - i + 1), in O(n log n): with the points
// (i, posted[i]), that is the least slope from the point (j + 1, completed[j]) to a point on
// its left, which is a vertex of the upper convex hull of those points (built left to right
// as j grows), the one where the slope to the query point stops falling.
double shortest_ns_a_request(const std::vector<int64_t> &posted,
                             const std::vector<int64_t> &completed)
{
    struct Point {
        double x, y;
    };
    auto slope = [](Point a, Point b) { return (b.y - a.y) / (b.x - a.x); };
    auto cross = [](Point o, Point a, Point b) {
        return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
    };
    std::vector<Point> hull;
    double best = 1e300;
    for (size_t j = 0; j < completed.size(); ++j) {
        Point p{static_cast<double>(j), static_cast<double>(posted[j])};
        while (hull.size() >= 2 && cross(hull[hull.size() - 2], hull.back(), p) >= 0)
            hull.pop_back(); // not a right turn: no longer on the upper hull
        hull.push_back(p);
        Point q{static_cast<double>(j + 1), static_cast<double>(completed[j])};
        size_t lo = 0, hi = hull.size() - 1; // the slope to q falls, then rises
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (slope(hull[mid], q) <= slope(hull[mid + 1], q))
                hi = mid;
            else
                lo = mid + 1;
        }
        best = std::min(best, slope(hull[lo], q));
    }
    return best;
}

class BandwidthLoop {
public:
    BandwidthLoop(const std::string &test, ULONG inflight, NDK_QP *qa, NDK_CQ *ca, NDK_SGE s,
                  UINT64 address, UINT32 token, NDK_QP *qb, NDK_CQ *cb, NDK_SGE rs)
        : send_(test == "send_bw"), read_(test == "read_bw"), inflight_(inflight), qa_(qa),
          ca_(ca), s_(s), address_(address), token_(token), qb_(qb), cb_(cb), rs_(rs)
    {
    }

    BandwidthRun run(uint64_t iters)
    {
        requests(inflight_); // warm, untimed
        posted_.assign(iters, 0);
        completed_.assign(iters, 0);
        requests(iters);
        return {shortest_ns_a_request(posted_, completed_),
                static_cast<double>(completed_.back() - posted_.front())};
    }

private:
    static constexpr ULONG kPollBatch = 16;

    static int64_t now_ns()
    {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   Clock::now().time_since_epoch())
            .count();
    }

    // Post and complete `n` requests; the timestamps are kept when the vectors hold n.
    void requests(uint64_t n)
    {
        bool timed = posted_.size() == n;
        uint64_t scnt = 0, ccnt = 0, rcnt = 0; // posted, completed, receives completed
        NDK_RESULT_EX out[kPollBatch];
        unsigned spins = 0;
        while (ccnt < n || (send_ && rcnt < n)) {
            while (scnt < n && scnt - ccnt < inflight_ && (!send_ || scnt - rcnt < inflight_)) {
                if (send_)
                    check(qb_->Dispatch->NdkReceive(qb_, nullptr, &rs_, 1), "NdkReceive");
                if (timed)
                    posted_[scnt] = now_ns();
                NTSTATUS st =
                    send_  ? qa_->Dispatch->NdkSend(qa_, nullptr, &s_, 1, 0)
                    : read_ ? qa_->Dispatch->NdkRead(qa_, nullptr, &s_, 1, address_, token_, 0)
                            : qa_->Dispatch->NdkWrite(qa_, nullptr, &s_, 1, address_, token_, 0);
                check(st, "post");
                ++scnt;
            }
            ULONG k = take(ca_, out);
            if (k != 0 && timed) {
                int64_t t = now_ns();
                for (ULONG i = 0; i < k; ++i)
                    completed_[ccnt + i] = t;
            }
            ccnt += k;
            ULONG r = send_ ? take(cb_, out) : 0;
            rcnt += r;
            if (k != 0 || r != 0) {
                spins = 0;
                continue;
            }
            empty_poll();
            if (++spins > (1u << 28))
                throw std::runtime_error("the bandwidth loop: completions did not arrive");
        }
    }

    // Up to kPollBatch results from `cq`, each STATUS_SUCCESS; how many.
    static ULONG take(NDK_CQ *cq, NDK_RESULT_EX *out)
    {
        ULONG k = cq->Dispatch->NdkGetCqResultsEx(cq, out, kPollBatch);
        for (ULONG i = 0; i < k; ++i)
            if (out[i].Status != STATUS_SUCCESS)
                fail("completion", out[i].Status);
        return k;
    }

    bool send_, read_;
    ULONG inflight_;
    NDK_QP *qa_;
    NDK_CQ *ca_;
    NDK_SGE s_;
    UINT64 address_;
    UINT32 token_;
    NDK_QP *qb_;
    NDK_CQ *cb_;
    NDK_SGE rs_;
    std::vector<int64_t> posted_, completed_;
};

std::string bandwidth(const Args &args, const std::string &test)
{
    auto size = static_cast<ULONG>(args.num("size", 65536));
    uint64_t iters = args.num("iters", 5000);
    auto inflight = static_cast<ULONG>(args.num("inflight", 64));
    bool processes = args.flag("processes");
    bool zero_copy = args.flag("zero-copy");
    if (zero_copy && !processes)
        throw UsageError("--zero-copy needs --processes (memory another process maps)");
    BandwidthRun w;
    if (processes) {
        // The target memory in a child process, which only waits (process_pingpong.hpp).
        ProcessPeer target(process_options(args), size, ProcessPeer::Role::target,
                           zero_copy ? Memory::shared : Memory::heap);
        target.run([&](ProcessPeer::Connected &c) {
            w = BandwidthLoop(test, inflight, c.qp, c.cq, c.send.sge(0, size),
                              c.remote_address, c.remote_token, nullptr, nullptr, {})
                    .run(iters);
        });
    } else {
        Pair pair(4096, 1024, adapters(args));
        Region local(pair.client(), pair.a().pd, size), remote(pair.server(), pair.b().pd, size);
        w = BandwidthLoop(test, inflight, pair.a().qp, pair.a().cq, local.sge(0, size),
                          remote.address(), remote.remote, pair.b().qp, pair.b().cq,
                          remote.sge(0, size))
                .run(iters);
    }
    double bytes = static_cast<double>(iters) * size;
    return Json()
        .str("test", test)
        .num("size", size)
        .num("iters", static_cast<double>(iters))
        .num("inflight", inflight)
        .str("mode", processes ? "processes" : "one_thread")
        .str("memory", zero_copy ? "shared" : "heap")
        .str("poll", args.str("poll", "spin"))
        .str("provider", args.str("provider", "soft"))
        .str("options", args.str("options", ""))
        .num("peak_mb_s", size / w.peak_ns * 1e3)
        .num("avg_mb_s", bytes / w.total_ns * 1e3)
        .num("avg_gb_s", bytes / w.total_ns)
        .num("peak_gb_s", size / w.peak_ns)
        .num("msg_rate_mpps", static_cast<double>(iters) / w.total_ns * 1e3)
        .text();
}

// ---- baselines ------------------------------------------------------------------------------

std::string memcpy_test(const Args &args)
{
    size_t size = args.num("size", 1 << 20), offset = args.num("offset", 0);
    uint64_t iters = args.num("iters", 0);
    if (iters == 0) // about 4 GiB copied, at least 20 copies
        iters = std::max<uint64_t>(20, (uint64_t{4} << 30) / std::max<size_t>(size, 1));
    size_t span = ((size + offset + 4095) & ~size_t{4095});
    auto *src = static_cast<unsigned char *>(std::aligned_alloc(4096, span));
    auto *dst = static_cast<unsigned char *>(std::aligned_alloc(4096, span));
    std::memset(src, 1, span);
    std::memset(dst, 2, span);
    double best = 1e300;
    for (uint64_t i = 0; i < iters / 10 + 1; ++i) // warm
        std::memcpy(dst + offset, src + offset, size);
    auto start = Clock::now();
    for (uint64_t i = 0; i < iters; ++i) {
        auto t0 = Clock::now();
        std::memcpy(dst + offset, src + offset, size);
        asm volatile("" : : "r"(dst) : "memory");
        best = std::min(best, ns_between(t0, Clock::now()));
    }
    double total = ns_between(start, Clock::now());
    std::free(src);
    std::free(dst);
    return Json()
        .str("test", "memcpy")
        .num("size", static_cast<double>(size))
        .num("offset", static_cast<double>(offset))
        .num("iters", static_cast<double>(iters))
        .num("avg_gb_s", static_cast<double>(size) * iters / total)
        .num("peak_gb_s", static_cast<double>(size) / best)
        .text();
}

// The floor of cross-memory attach: process_vm_writev from this process into a child's buffer,
// the copy a provider makes for a peer buffer it cannot map, with nothing else around it.  The
// child allocates and touches its buffer (so no page fault is timed), tells the parent the
// address through a pipe, and waits for the pipe's other end to close.
std::string cma_test(const Args &args)
{
    size_t size = args.num("size", 1 << 20);
    uint64_t iters = args.num("iters", 0);
    if (iters == 0)
        iters = std::max<uint64_t>(20, (uint64_t{4} << 30) / std::max<size_t>(size, 1));
    size_t span = (size + 4095) & ~size_t{4095};
    int up[2], down[2]; // child -> parent: the address; parent -> child: EOF ends it
    if (::pipe2(up, O_CLOEXEC) != 0 || ::pipe2(down, O_CLOEXEC) != 0)
        throw std::system_error(errno, std::generic_category(), "pipe2");
    pid_t child = ::fork();
    if (child < 0)
        throw std::system_error(errno, std::generic_category(), "fork");
    if (child == 0) {
        ::close(up[0]);
        ::close(down[1]);
        void *target = std::aligned_alloc(4096, span);
        if (target)
            std::memset(target, 2, span);
        auto address = reinterpret_cast<uintptr_t>(target);
        (void)!::write(up[1], &address, sizeof address);
        char byte;
        while (::read(down[0], &byte, 1) < 0 && errno == EINTR) {
        }
        ::_exit(0);
    }
    ::close(up[1]);
    ::close(down[0]);
    struct Child { // closes the pipe and reaps the child however the parent leaves
        pid_t pid;
        int up, down;
        ~Child()
        {
            ::close(down);
            ::close(up);
            ::waitpid(pid, nullptr, 0);
        }
    } reap{child, up[0], down[1]};
    uintptr_t address = 0;
    if (::read(up[0], &address, sizeof address) != sizeof address || address == 0)
        throw std::runtime_error("cma: the child did not allocate its buffer");
    auto *src = static_cast<unsigned char *>(std::aligned_alloc(4096, span));
    std::unique_ptr<unsigned char, decltype(&std::free)> own(src, &std::free);
    std::memset(src, 1, span);
    iovec local{src, size}, remote{reinterpret_cast<void *>(address), size};
    auto write_once = [&] {
        ssize_t n = ::process_vm_writev(child, &local, 1, &remote, 1, 0);
        if (n < 0)
            throw std::system_error(errno, std::generic_category(), "process_vm_writev");
        if (static_cast<size_t>(n) != size)
            throw std::runtime_error("process_vm_writev moved " + std::to_string(n) + " of " +
                                     std::to_string(size) + " bytes");
    };
    for (uint64_t i = 0; i < iters / 10 + 1; ++i) // warm
        write_once();
    double best = 1e300;
    auto start = Clock::now();
    for (uint64_t i = 0; i < iters; ++i) {
        auto t0 = Clock::now();
        write_once();
        best = std::min(best, ns_between(t0, Clock::now()));
    }
    double total = ns_between(start, Clock::now());
    return Json()
        .str("test", "cma")
        .str("mode", "processes")
        .num("size", static_cast<double>(size))
        .num("iters", static_cast<double>(iters))
        .num("avg_gb_s", static_cast<double>(size) * iters / total)
        .num("peak_gb_s", static_cast<double>(size) / best)
        .text();
}

std::string poll_rate(const Args &args)
{
    auto batch = static_cast<ULONG>(args.num("batch", 64));
    auto count = static_cast<ULONG>(args.num("count", 65536));
    uint64_t iters = args.num("iters", 20);
    Pair pair(count, 1024, adapters(args));
    Region local(pair.client(), pair.a().pd, 8), remote(pair.server(), pair.b().pd, 8);
    NDK_QP *qa = pair.a().qp;
    NDK_CQ *cq = pair.a().cq;
    NDK_SGE s = local.sge(0, 8);
    std::vector<NDK_RESULT_EX> out(batch);
    double poll_ns = 0, post_ns = 0, best_poll = 1e300, best_round = 1e300;
    for (uint64_t it = 0; it <= iters; ++it) {
        auto t0 = Clock::now();
        for (ULONG i = 0; i < count; ++i)
            check(qa->Dispatch->NdkWrite(qa, nullptr, &s, 1, remote.address(), remote.remote, 0),
                  "NdkWrite");
        auto t1 = Clock::now();
        ULONG got = 0;
        while (got < count) {
            ULONG k = cq->Dispatch->NdkGetCqResultsEx(cq, out.data(), batch);
            if (k == 0)
                fail("poll_rate: the CQ ran dry", STATUS_UNSUCCESSFUL);
            got += k;
        }
        auto t2 = Clock::now();
        if (it > 0) { // the first round is a warm-up
            post_ns += ns_between(t0, t1);
            poll_ns += ns_between(t1, t2);
            best_poll = std::min(best_poll, ns_between(t1, t2));
            best_round = std::min(best_round, ns_between(t0, t2));
        }
    }
    double n = static_cast<double>(iters) * count;
    return Json()
        .str("test", "poll_rate")
        .num("batch", batch)
        .num("count", count)
        .num("iters", static_cast<double>(iters))
        .num("poll_ns_per_completion", poll_ns / n)
        .num("completions_per_s", n / poll_ns * 1e9)
        .num("post_ns_per_write", post_ns / n)
        .num("post_poll_per_s", n / (poll_ns + post_ns) * 1e9)
        .num("best_completions_per_s", count / best_poll * 1e9)
        .num("best_post_poll_per_s", count / best_round * 1e9)
        .text();
}

// N connections between the same two adapters, one thread each: `batch` 8-byte (--size)
// RDMA writes posted on the connection's QP, then polled from its own CQ, over and over.  The
// threads start together, after a warm-up; the first to finish its --iters ends the others'
// windows, so every connection's rate is measured while all of them run, and the aggregate
// is the sum of those rates.  With one connection it is the post + poll rate of one core in a
// steady state (the CQ holds at most one batch), which poll_rate's filled CQ is not.
std::string msg_rate(const Args &args)
{
    auto connections = static_cast<unsigned>(args.num("connections", 1));
    auto size = static_cast<ULONG>(args.num("size", 8));
    auto batch = static_cast<ULONG>(args.num("batch", 16));
    uint64_t iters = args.num("iters", 1000000);
    Pair pair(4096, 1024, adapters(args), 0, false, connections);
    std::vector<std::unique_ptr<Region>> local, remote;
    for (unsigned c = 0; c < connections; ++c) {
        local.push_back(std::make_unique<Region>(pair.client(), pair.a(c).pd, size));
        remote.push_back(std::make_unique<Region>(pair.server(), pair.b(c).pd, size));
    }
    struct Run {
        uint64_t ops = 0;
        double ns = 0;
        std::exception_ptr error;
    };
    std::vector<Run> runs(connections);
    std::atomic<unsigned> ready{0};
    std::atomic<bool> stop{false};
    auto drive = [&](unsigned c) {
        Run &run = runs[c];
        try {
            NDK_QP *qp = pair.a(c).qp;
            NDK_CQ *cq = pair.a(c).cq;
            NDK_SGE s = local[c]->sge(0, size);
            UINT64 address = remote[c]->address();
            UINT32 token = remote[c]->remote;
            std::vector<NDK_RESULT_EX> out(batch);
            auto round = [&](ULONG n) {
                for (ULONG i = 0; i < n; ++i)
                    check(qp->Dispatch->NdkWrite(qp, nullptr, &s, 1, address, token, 0),
                          "NdkWrite");
                poll_n(cq, out.data(), n);
            };
            for (uint64_t w = 0; w < iters / batch / 10 + 1; ++w) // caches, allocator
                round(batch);
            ready.fetch_add(1);
            while (ready.load() < connections) {
            }
            auto t0 = Clock::now();
            while (run.ops < iters && !stop.load(std::memory_order_relaxed)) {
                auto n = static_cast<ULONG>(std::min<uint64_t>(batch, iters - run.ops));
                round(n); // the last round takes what is left: exactly --iters
                run.ops += n;
            }
            run.ns = ns_between(t0, Clock::now());
            stop.store(true);
        } catch (...) {
            run.error = std::current_exception();
            stop.store(true);
            ready.fetch_add(connections); // no one waits at the start for this thread
        }
    };
    std::vector<std::thread> threads;
    for (unsigned c = 0; c < connections; ++c)
        threads.emplace_back(drive, c);
    for (std::thread &t : threads)
        t.join();
    double mops = 0, ops = 0, window_ns = 0;
    std::string each;
    for (const Run &run : runs) {
        if (run.error)
            std::rethrow_exception(run.error);
        double rate = run.ns > 0 ? static_cast<double>(run.ops) / run.ns * 1e3 : 0;
        mops += rate;
        ops += static_cast<double>(run.ops);
        window_ns = std::max(window_ns, run.ns);
        each += (each.empty() ? "" : ", ") + Json()
                                                 .num("ops", static_cast<double>(run.ops))
                                                 .num("seconds", run.ns / 1e9)
                                                 .num("mops", rate)
                                                 .text();
    }
    return Json()
        .str("test", "msg_rate")
        .num("connections", connections)
        .num("size", size)
        .num("batch", batch)
        .num("iters", static_cast<double>(iters))
        .str("op", "write")
        .str("provider", args.str("provider", "soft"))
        .str("options", args.str("options", ""))
        .num("aggregate_mops", mops)
        .num("ops", ops)
        .num("window_s", window_ns / 1e9)
        .raw("connection", "[" + each + "]")
        .text();
}

// ---- control plane --------------------------------------------------------------------------

// AdapterOptions::address's n of the one adapter create_close and scale open (a Pair's are
// counted from 0).
constexpr unsigned kAlone = 240;

std::string create_close(const Args &args)
{
    uint64_t iters = args.num("iters", 200000);
    AdapterOptions options = adapters(args);
    RawAdapter a(options.open_options(kAlone), options.provider);
    NDK_PD *pd0 = a.pd();
    NDK_CQ *cq0 = a.cq(1024);
    Done done;
    auto closed = [&](NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_OBJECT fn) {
        check(fn(h, Done::close, &done), "close (inline)");
    };
    std::map<std::string, std::function<void()>> ops = {
        {"cq",
         [&] {
             NDK_CQ *o = nullptr;
             check(a.d().NdkCreateCq(a.get(), 64, ignore_cq, nullptr, nullptr, Done::create, &done,
                                     &o),
                   "NdkCreateCq");
             closed(&o->Header, o->Dispatch->NdkCloseCq);
         }},
        {"pd",
         [&] {
             NDK_PD *o = nullptr;
             check(a.d().NdkCreatePd(a.get(), Done::create, &done, &o), "NdkCreatePd");
             closed(&o->Header, o->Dispatch->NdkClosePd);
         }},
        {"mr",
         [&] {
             NDK_MR *o = nullptr;
             check(pd0->Dispatch->NdkCreateMr(pd0, FALSE, Done::create, &done, &o), "NdkCreateMr");
             closed(&o->Header, o->Dispatch->NdkCloseMr);
         }},
        {"mw",
         [&] {
             NDK_MW *o = nullptr;
             check(pd0->Dispatch->NdkCreateMw(pd0, Done::create, &done, &o), "NdkCreateMw");
             closed(&o->Header, o->Dispatch->NdkCloseMw);
         }},
        {"srq",
         [&] {
             NDK_SRQ *o = nullptr;
             check(pd0->Dispatch->NdkCreateSrq(pd0, 64, 4, 0, ignore_srq, nullptr, nullptr,
                                               Done::create, &done, &o),
                   "NdkCreateSrq");
             closed(&o->Header, o->Dispatch->NdkCloseSrq);
         }},
        {"qp",
         [&] {
             NDK_QP *o = nullptr;
             check(pd0->Dispatch->NdkCreateQp(pd0, cq0, cq0, nullptr, 64, 64, 4, 4, 0,
                                              Done::create, &done, &o),
                   "NdkCreateQp");
             closed(&o->Header, o->Dispatch->NdkCloseQp);
         }},
        {"connector",
         [&] {
             NDK_CONNECTOR *o = nullptr;
             check(a.d().NdkCreateConnector(a.get(), Done::create, &done, &o),
                   "NdkCreateConnector");
             closed(&o->Header, o->Dispatch->NdkCloseConnector);
         }},
        {"mr_register_4k",
         [&, mr = a.mr(pd0), buffer = std::vector<char>(4096), mdl = MDL{}]() mutable {
             NdkInitializeMdl(&mdl, buffer.data(), 4096);
             check(mr->Dispatch->NdkRegisterMr(mr, &mdl, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                               Done::request, &done),
                   "NdkRegisterMr");
             check(mr->Dispatch->NdkDeregisterMr(mr, Done::request, &done), "NdkDeregisterMr");
         }},
    };
    Json out;
    out.str("test", "create_close").num("iters", static_cast<double>(iters));
    Json ns;
    for (auto &[name, op] : ops) {
        for (uint64_t i = 0; i < iters / 10 + 10; ++i)
            op();
        auto t0 = Clock::now();
        for (uint64_t i = 0; i < iters; ++i)
            op();
        ns.num(name, ns_between(t0, Clock::now()) / static_cast<double>(iters));
    }
    out.raw("ns_per_create_close", ns.text());
    return out.text();
}

std::string scale(const Args &args)
{
    uint64_t mrs = args.num("mrs", 100000), qps = args.num("qps", 10000);
    auto cq_depth = static_cast<ULONG>(args.num("cq-depth", 1u << 22));
    uint64_t cq_fill = args.num("cq-fill", 0);
    std::string what = "," + args.str("what", "mrs,qps,cq") + ",";
    auto wanted = [&](const char *part) {
        return what.find("," + std::string(part) + ",") != std::string::npos;
    };
    AdapterOptions options = adapters(args);
    RawAdapter a(options.open_options(kAlone), options.provider);
    NDK_PD *pd = a.pd();
    Done done;
    Json out;
    out.str("test", "scale");

    // MRs: each created and registered over one page.
    if (wanted("mrs")) {
        size_t before = rss_bytes();
        auto t0 = Clock::now();
        auto *buffer = static_cast<unsigned char *>(std::aligned_alloc(4096, 4096));
        std::vector<NDK_MR *> list(mrs);
        std::vector<MDL> mdls(mrs);
        size_t after_arrays = rss_bytes();
        for (uint64_t i = 0; i < mrs; ++i) {
            check(pd->Dispatch->NdkCreateMr(pd, FALSE, Done::create, &done, &list[i]),
                  "NdkCreateMr");
            NdkInitializeMdl(&mdls[i], buffer, 4096);
            check(list[i]->Dispatch->NdkRegisterMr(list[i], &mdls[i], 4096,
                                                   NDK_MR_FLAG_ALLOW_LOCAL_WRITE, Done::request,
                                                   &done),
                  "NdkRegisterMr");
        }
        double ns = ns_between(t0, Clock::now());
        size_t after = rss_bytes();
        auto t1 = Clock::now();
        for (uint64_t i = 0; i < mrs; ++i) {
            check(list[i]->Dispatch->NdkDeregisterMr(list[i], Done::request, &done),
                  "NdkDeregisterMr");
            check(list[i]->Dispatch->NdkCloseMr(&list[i]->Header, Done::close, &done),
                  "NdkCloseMr");
        }
        double close_ns = ns_between(t1, Clock::now());
        std::free(buffer);
        out.raw("mrs",
                Json()
                    .num("count", static_cast<double>(mrs))
                    .num("create_register_us_each", ns / static_cast<double>(mrs) / 1000)
                    .num("deregister_close_us_each", close_ns / static_cast<double>(mrs) / 1000)
                    .num("provider_bytes_each", (static_cast<double>(after) - after_arrays) / mrs)
                    .num("harness_bytes_each",
                         (static_cast<double>(after_arrays) - before) / mrs)
                    .text());
    }
    // QPs on one CQ.
    if (wanted("qps")) {
        NDK_CQ *cq = a.cq(1024);
        std::vector<NDK_QP *> list(qps);
        size_t after_arrays = rss_bytes();
        auto t0 = Clock::now();
        for (uint64_t i = 0; i < qps; ++i)
            check(pd->Dispatch->NdkCreateQp(pd, cq, cq, nullptr, 64, 64, 4, 4, 0, Done::create,
                                            &done, &list[i]),
                  "NdkCreateQp");
        double ns = ns_between(t0, Clock::now());
        size_t after = rss_bytes();
        auto t1 = Clock::now();
        for (uint64_t i = 0; i < qps; ++i)
            check(list[i]->Dispatch->NdkCloseQp(&list[i]->Header, Done::close, &done),
                  "NdkCloseQp");
        double close_ns = ns_between(t1, Clock::now());
        out.raw("qps", Json()
                           .num("count", static_cast<double>(qps))
                           .num("create_us_each", ns / static_cast<double>(qps) / 1000)
                           .num("close_us_each", close_ns / static_cast<double>(qps) / 1000)
                           .num("provider_bytes_each",
                                (static_cast<double>(after) - after_arrays) / qps)
                           .text());
    }
    // One deep CQ, optionally filled with write completions.
    if (wanted("cq")) {
        size_t before = rss_bytes();
        auto t0 = Clock::now();
        NDK_CQ *cq = a.cq(cq_depth);
        double create_ns = ns_between(t0, Clock::now());
        size_t created = rss_bytes();
        double fill_ns = 0;
        size_t filled = created;
        if (cq_fill > 0) {
            // Filled through a connected pair whose CQ has that depth (its own adapters).
            Pair pair(static_cast<ULONG>(std::min<uint64_t>(cq_fill + 16, cq_depth)), 1024,
                      options);
            Region local(pair.client(), pair.a().pd, 8), remote(pair.server(), pair.b().pd, 8);
            NDK_QP *qa = pair.a().qp;
            NDK_SGE s = local.sge(0, 8);
            size_t before_fill = rss_bytes();
            auto t1 = Clock::now();
            for (uint64_t i = 0; i < cq_fill; ++i)
                check(qa->Dispatch->NdkWrite(qa, nullptr, &s, 1, remote.address(), remote.remote,
                                             0),
                      "NdkWrite");
            fill_ns = ns_between(t1, Clock::now());
            filled = rss_bytes();
            out.raw("cq_fill", Json()
                                   .num("results", static_cast<double>(cq_fill))
                                   .num("bytes_per_result",
                                        (static_cast<double>(filled) - before_fill) / cq_fill)
                                   .num("post_us_each", fill_ns / cq_fill / 1000)
                                   .text());
        }
        out.raw("cq", Json()
                          .num("depth", cq_depth)
                          .num("create_us", create_ns / 1000)
                          .num("bytes_at_create", static_cast<double>(created) - before)
                          .text());
        check(cq->Dispatch->NdkCloseCq(&cq->Header, Done::close, &done), "NdkCloseCq");
    }
    out.num("rss_mb_end", static_cast<double>(rss_bytes()) / 1e6);
    return out.text();
}

// Why the test's adapters cannot be had here, or "" when they can: the provider does not load
// (ndk::Provider::load, as every part of the harness loads it), or an adapter of it does not
// open with the run's knob lines and address (a device that is absent, an address that is not
// this host's, a knob the provider refuses).  Checked once before a test, whose own opening
// would otherwise fail in a child process, or after a fork.  "" for a test that opens none.
std::string provider_problem(const Args &args)
{
    const auto &tests = test_options();
    auto test = std::find_if(tests.begin(), tests.end(),
                             [&](const auto &t) { return t.first == args.test; });
    if (std::none_of(test->second.begin(), test->second.end(),
                     [](const Option &o) { return std::string(o.name) == "provider"; }))
        return "";
    AdapterOptions options = adapters(args);
    try {
        RawAdapter probe(options.open_options(kAlone), options.provider);
        own_address(probe, options.address(kAlone)); // one to listen and connect on
    } catch (const std::exception &e) {
        return "provider " + options.provider + ": " + e.what();
    }
    return "";
}

} // namespace

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
            std::printf("%s", usage().c_str());
            return 0;
        }
    if (argc < 2) {
        std::fprintf(stderr, "%s", usage().c_str());
        return 2;
    }
    Args args;
    args.test = argv[1];
    try {
        parse_options(args, argc, argv, 2);
        poll_yields() = args.str("poll", "spin") == "yield";
    } catch (const UsageError &e) {
        bool known = std::any_of(test_options().begin(), test_options().end(),
                                 [&](const auto &t) { return t.first == args.test; });
        std::fprintf(stderr, "ndk_perf%s: %s\n", known ? (" " + args.test).c_str() : "",
                     e.what());
        return 2;
    }
    if (std::string why = provider_problem(args); !why.empty()) {
        std::fprintf(stderr, "ndk_perf %s: %s\n", args.test.c_str(), why.c_str());
        return 2;
    }
    try {
        std::string out;
        const std::string &t = args.test;
        if (t == "send_lat")
            out = send_lat(args);
        else if (t == "write_lat" || t == "read_lat")
            out = rdma_lat(args, t == "read_lat");
        else if (t == "cacheline")
            out = cacheline(args);
        else if (t == "send_bw" || t == "write_bw" || t == "read_bw")
            out = bandwidth(args, t);
        else if (t == "msg_rate")
            out = msg_rate(args);
        else if (t == "memcpy")
            out = memcpy_test(args);
        else if (t == "cma")
            out = cma_test(args);
        else if (t == "poll_rate")
            out = poll_rate(args);
        else if (t == "create_close")
            out = create_close(args);
        else if (t == "scale")
            out = scale(args);
        else
            throw std::logic_error("no runner for test " + t);
        std::printf("%s\n", out.c_str());
        return 0;
    } catch (const UsageError &e) { // a combination the provider cannot run (--processes)
        std::fprintf(stderr, "ndk_perf %s: %s\n", args.test.c_str(), e.what());
        return 2;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "ndk_perf %s: %s\n", args.test.c_str(), e.what());
        return 1;
    }
}
