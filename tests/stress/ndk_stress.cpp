// ndk_stress: the stress test with byte-exact checking (docs/stress.md).  Opens two adapters
// with the options given, connects threads x connections QP pairs between them, lets the
// threads post every request type for --seconds, drains, and prints what was posted,
// completed and checked.  Exits 1 on any wrong byte, lost, duplicate or misplaced completion,
// unexpected status, validation error or hang (naming what is outstanding), 2 on bad usage.
#include "stress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include <unistd.h>

namespace {

using namespace stress;

constexpr const char *kUsage =
    "usage: ndk_stress [--threads N] [--connections M] [--seconds S] [--options OPTIONS]\n"
    "                  [--seed N] [--validate | --no-validate] [--mode owned|split|mixed]\n"
    "                  [--max-size BYTES] [--ops LIST] [--provider NAME] [--addresses A,B]\n"
    "                  [--drain-seconds S]\n"
    "  --threads N        threads, each driving its own connections (default 2)\n"
    "  --connections M    connections per thread (default 4)\n"
    "  --seconds S        how long to post new requests, more than 0 (default 3); then\n"
    "                     it drains\n"
    "  --options OPTIONS  adapter options, 'key=value' lines or ';'-separated\n"
    "                     (default: $NDK_STRESS_OPTIONS), e.g. transport=inproc\n"
    "                     (transport=shm without shm_fabric: a fabric of this run's own)\n"
    "  --seed N           the threads' random choices (default 1)\n"
    "  --validate         both adapters behind the validation layer (default: off)\n"
    "  --mode MODE        owned: a thread drives both ends of its connections; split: the\n"
    "                     passive end is driven by the next thread; mixed (default): half each\n"
    "  --max-size BYTES   the longest send, write or read (default 4096)\n"
    "  --ops LIST         request kinds, comma-separated (default all): send, solicit,\n"
    "                     inline, sendinv, write, read, mw, fr, srq\n"
    "  --provider NAME    default soft\n"
    "  --addresses A,B    the adapters' addresses (default: the ones the provider gives)\n"
    "  --drain-seconds S  how long the drain may take before it is a hang (default 60)\n";

// A finite number >= 0 (strtod also reads "inf" and "nan").
bool number(const char *text, double &out)
{
    char *end = nullptr;
    out = std::strtod(text, &end);
    return end != text && *end == '\0' && std::isfinite(out) && out >= 0;
}

constexpr double kMaxSeconds = 7 * 24 * 3600.0;

// nullopt (with a message) on bad usage.
std::optional<Config> parse(int argc, char **argv)
{
    Config c;
    if (const char *env = std::getenv("NDK_STRESS_OPTIONS"))
        c.options = env;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        }
        if (arg == "--validate" || arg == "--no-validate") {
            c.validate = arg == "--validate";
            continue;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "ndk_stress: %s needs a value\n", arg.c_str());
            return std::nullopt;
        }
        const char *value = argv[++i];
        double n = 0;
        bool whole = number(value, n) && n == static_cast<double>(static_cast<uint64_t>(n));
        if (arg == "--threads" && whole && n >= 1 && n <= 256) {
            c.threads = static_cast<int>(n);
        } else if (arg == "--connections" && whole && n >= 1 && n <= 4096) {
            c.connections = static_cast<int>(n);
        } else if (arg == "--seconds" && number(value, n) && n > 0 && n <= kMaxSeconds) {
            c.seconds = n; // 0 posts nothing, and its rate divides by it
        } else if (arg == "--drain-seconds" && number(value, n) && n > 0 && n <= kMaxSeconds) {
            c.drain_seconds = n;
        } else if (arg == "--seed" && whole) {
            c.seed = static_cast<uint64_t>(n);
        } else if (arg == "--max-size" && whole && n >= 64 && n <= (1 << 24)) {
            c.max_size = static_cast<uint32_t>(n);
        } else if (arg == "--options") {
            c.options = value;
        } else if (arg == "--provider") {
            c.provider = value;
        } else if (arg == "--mode" && (std::strcmp(value, "owned") == 0 ||
                                       std::strcmp(value, "split") == 0 ||
                                       std::strcmp(value, "mixed") == 0)) {
            c.mode = value[0] == 'o' ? Mode::Owned : value[0] == 's' ? Mode::Split : Mode::Mixed;
        } else if (arg == "--ops" && parse_features(value)) {
            c.features = *parse_features(value);
        } else if (arg == "--addresses") {
            std::stringstream in(value);
            std::string a;
            c.addresses.clear();
            while (std::getline(in, a, ','))
                c.addresses.push_back(a);
            if (c.addresses.size() != 2) {
                std::fprintf(stderr, "ndk_stress: --addresses takes two addresses, A,B\n");
                return std::nullopt;
            }
        } else {
            std::fprintf(stderr, "ndk_stress: bad argument %s %s\n\n%s", arg.c_str(), value,
                         kUsage);
            return std::nullopt;
        }
    }
    if (size_t(c.threads) * size_t(c.connections) > 30000) {
        std::fprintf(stderr, "ndk_stress: at most 30000 connections in all\n");
        return std::nullopt;
    }
    return c;
}

double seconds_since(Clock::time_point t)
{
    return std::chrono::duration<double>(Clock::now() - t).count();
}

bool all_finished(const World &world)
{
    for (const auto &d : world.drivers)
        if (!d->finished.load())
            return false;
    return true;
}

// Wait until every driver finished, at most `seconds`; once a run failed, at most 5 s (its
// connections may be broken, and what is left is reported sooner).
bool wait_finished(const World &world, const Run &run, double seconds)
{
    auto start = Clock::now();
    while (!all_finished(world)) {
        double limit = run.failure_count() == 0 ? seconds : std::min(seconds, 5.0);
        if (seconds_since(start) >= limit)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

void print_failures(const Run &run, const std::vector<std::string> &more)
{
    std::vector<std::string> first = run.first_failures();
    uint64_t count = run.failure_count() + more.size();
    std::printf("FAIL: %llu failure%s\n", static_cast<unsigned long long>(count),
                count == 1 ? "" : "s");
    for (const auto &f : first)
        std::printf("  %s\n", f.c_str());
    if (run.failure_count() > first.size())
        std::printf("  ... and %llu more\n",
                    static_cast<unsigned long long>(run.failure_count() - first.size()));
    for (const auto &f : more)
        std::printf("  %s\n", f.c_str());
}

} // namespace

// transport=shm without shm_fabric: a fabric of this run's own, so that runs side by side
// (two builds' ctest, a developer's shell) never claim each other's addresses.
void own_shm_fabric(std::string &options)
{
    if (options.find("transport=shm") == std::string::npos ||
        options.find("shm_fabric=") != std::string::npos)
        return;
    options += ";shm_fabric=stress-" + std::to_string(::getpid());
}

int main(int argc, char **argv)
{
    std::optional<Config> config = parse(argc, argv);
    if (!config)
        return 2;
    own_shm_fabric(config->options);
    Run run;
    run.config = *config;
    const Config &c = run.config;
    std::unique_ptr<World> world;
    try {
        world = std::make_unique<World>(run);
    } catch (const std::exception &x) {
        std::printf("ndk_stress: setup failed: %s\nFAIL\n", x.what());
        return 1;
    }
    const Limits &l = run.limits;
    std::printf("ndk_stress: provider %s, options \"%s\", validation %s, seed %llu\n",
                c.provider.c_str(), c.options.c_str(), c.validate ? "on" : "off",
                static_cast<unsigned long long>(c.seed));
    std::printf("  %d threads x %d connections between %s and %s: %u split between two "
                "threads, %u of %d ends on an SRQ\n",
                c.threads, c.connections, world->addresses()[0].c_str(),
                world->addresses()[1].c_str(), world->split_connections(), world->srq_ends(),
                2 * c.threads * c.connections);
    std::printf("  ops %s; up to %u bytes, %u SGEs (reads %u, receives %u), inline %u, "
                "%u reads in flight\n",
                feature_names(l.features).c_str(), l.max_size, l.initiator_sge, l.read_sge,
                l.receive_sge, l.inline_size, l.read_limit);
    std::fflush(stdout);

    std::vector<std::thread> threads;
    for (auto &d : world->drivers)
        threads.emplace_back([driver = d.get()] { driver->main(); });
    auto start = Clock::now();
    auto next_progress = start + std::chrono::seconds(10);
    while (seconds_since(start) < c.seconds && run.failure_count() == 0 && !all_finished(*world)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (Clock::now() >= next_progress) {
            uint64_t done = 0;
            for (const auto &d : world->drivers)
                done += d->completions.load(std::memory_order_relaxed);
            std::printf("  %.0f s: %llu completions\n", seconds_since(start),
                        static_cast<unsigned long long>(done));
            std::fflush(stdout);
            next_progress += std::chrono::seconds(10);
        }
    }
    run.stop.store(true);
    double posting = seconds_since(start);
    auto drain_start = Clock::now();
    bool drained = wait_finished(*world, run, c.drain_seconds);
    double drain = seconds_since(drain_start);
    std::vector<std::string> more;
    if (!drained) {
        run.abort.store(true);
        bool stopped = wait_finished(*world, run, 10);
        char text[96];
        std::snprintf(text, sizeof text, "hang: the drain did not finish within %.1f s; outstanding:",
                      drain);
        more.push_back(text);
        for (const auto &d : world->drivers) {
            if (!d->finished.load()) {
                const char *in = d->in_call.load();
                more.push_back("  thread " + std::to_string(d->index) + " does not return" +
                               (in ? std::string(" from ") + in : std::string()));
                continue;
            }
            for (const auto &line : d->outstanding)
                more.push_back("  " + line);
        }
        if (!stopped) {
            // A thread stuck in the provider cannot be joined, nor its adapter closed.
            print_failures(run, more);
            std::fflush(stdout);
            std::_Exit(1);
        }
    }
    for (auto &t : threads)
        t.join();

    Stats total;
    for (const auto &d : world->drivers)
        total.add(d->stats);
    std::printf("  %-16s %12s %12s %14s\n", "request", "posted", "completed", "bytes checked");
    uint64_t posted = 0, completed = 0, bytes = 0;
    for (size_t i = 0; i < kOps; ++i) {
        const Count &n = total.ops[i];
        auto op = static_cast<Op>(i);
        if (n.posted == 0 && n.completed == 0)
            continue;
        std::printf("  %-16s %12llu %12llu %14llu\n", op_name(op),
                    static_cast<unsigned long long>(n.posted),
                    static_cast<unsigned long long>(n.completed),
                    static_cast<unsigned long long>(n.bytes));
        if (n.posted != n.completed)
            more.push_back(std::string(op_name(op)) + ": " + std::to_string(n.posted) +
                           " posted, " + std::to_string(n.completed) + " completed");
        posted += n.posted;
        completed += n.completed;
        bytes += n.bytes;
    }
    std::printf("  %-16s %12llu %12llu %14llu\n", "all", static_cast<unsigned long long>(posted),
                static_cast<unsigned long long>(completed),
                static_cast<unsigned long long>(bytes));
    std::printf("  receive-and-invalidate %llu; CQ arms %llu, notifications %llu\n",
                static_cast<unsigned long long>(total.receive_invalidates),
                static_cast<unsigned long long>(total.arms),
                static_cast<unsigned long long>(total.notifications));
    std::printf("  posting %.2f s, drain %.3f s: %.0f completions/s, %.1f MB/s checked\n", posting,
                drain, static_cast<double>(completed) / posting,
                static_cast<double>(bytes) / posting / 1e6);

    std::vector<std::string> warnings;
    try {
        world->close(more, warnings);
    } catch (const std::exception &x) {
        more.push_back(std::string("closing the adapters: ") + x.what());
    }
    if (c.validate)
        std::printf("  validation: %zu warnings\n", warnings.size());
    for (const auto &w : warnings)
        std::printf("  warning: %s\n", w.c_str());
    if (run.failure_count() == 0 && more.empty()) {
        std::printf("PASS: every request completed once with STATUS_SUCCESS, every byte as "
                    "written, nothing outstanding\n");
        return 0;
    }
    print_failures(run, more);
    return 1;
}
