// Shared helpers for the GoogleTest suites: a raw NDK adapter opened straight through the
// provider entry (OPEN_NDK_ADAPTER_HANDLER / CLOSE_NDK_ADAPTER_HANDLER), completion recorders
// that remember how often, with what and on which thread they were called, and engine helpers
// (a barrier, a gate that holds the provider's callback thread): a job on the soft provider's
// engine, which is FIFO, and an asynchronous failure injected by the fault layer, whose
// completions keep their order too.
#pragma once

#include "ndk/raw_adapter.hpp"
#include "ndk/call.hpp"
#include "ndk/ndkpi.h"
#include "ndk/provider.h"
#include "ndk/registry.hpp"
#include "ndk/status.hpp"
#include "ndk/validation.hpp"
#include "layers/fault/fault_layer.hpp"
#include "layers/validate/validate_layer.hpp"
#include "providers/soft/soft_adapter.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ndktest {

inline constexpr std::chrono::seconds kWait{5};
// A status no provider returns: "the callback never set a status".
inline constexpr NTSTATUS kNoStatus = static_cast<NTSTATUS>(0x7EADBEEF);

// Prints statuses by name in assertion messages.
struct St {
    NTSTATUS value;
    bool operator==(const St &) const = default;
};
inline std::ostream &operator<<(std::ostream &out, const St &s)
{
    return out << ndk::describe_status(s.value);
}
#define EXPECT_STATUS(expected, actual) EXPECT_EQ(::ndktest::St{expected}, ::ndktest::St{actual})
#define ASSERT_STATUS(expected, actual) ASSERT_EQ(::ndktest::St{expected}, ::ndktest::St{actual})

// An ordered log of callback events, shared by several recorders.
class EventLog {
public:
    void add(std::string entry)
    {
        std::lock_guard lock(mu_);
        entries_.push_back(std::move(entry));
    }
    std::vector<std::string> entries() const
    {
        std::lock_guard lock(mu_);
        return entries_;
    }
    // Position of an entry, or -1.
    long index_of(const std::string &entry) const
    {
        std::lock_guard lock(mu_);
        auto it = std::find(entries_.begin(), entries_.end(), entry);
        return it == entries_.end() ? -1 : static_cast<long>(it - entries_.begin());
    }

private:
    mutable std::mutex mu_;
    std::vector<std::string> entries_;
};

// Holds whoever calls wait() until open() (or destruction).
class Gate {
public:
    ~Gate() { open(); }
    void open()
    {
        {
            std::lock_guard lock(mu_);
            open_ = true;
        }
        cv_.notify_all();
    }
    void wait()
    {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return open_; });
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool open_ = false;
};

// Records every call of one consumer callback: count, last status, last object, thread.
class Record {
public:
    Record() = default;
    Record(EventLog *log, std::string name) : log_(log), name_(std::move(name)) {}
    Record(const Record &) = delete;
    Record &operator=(const Record &) = delete;

    // Runs inside the callback, after the log's "<name>" entry and before "<name>:end".
    std::function<void()> during;

    static void create(PVOID context, NTSTATUS status, NDK_OBJECT_HEADER *object)
    {
        static_cast<Record *>(context)->hit(status, object);
    }
    static void request(PVOID context, NTSTATUS status)
    {
        static_cast<Record *>(context)->hit(status, nullptr);
    }
    static void close(PVOID context)
    {
        static_cast<Record *>(context)->hit(STATUS_SUCCESS, nullptr);
    }
    static void notify(PVOID context, NTSTATUS status)
    {
        static_cast<Record *>(context)->hit(status, nullptr);
    }

    // Wait until the callback ran at least `n` times; false after kWait.
    bool wait(int n = 1) const
    {
        std::unique_lock lock(mu_);
        return cv_.wait_for(lock, kWait, [&] { return count_ >= n; });
    }
    int count() const
    {
        std::lock_guard lock(mu_);
        return count_;
    }
    NTSTATUS status() const
    {
        std::lock_guard lock(mu_);
        return status_;
    }
    NDK_OBJECT_HEADER *object() const
    {
        std::lock_guard lock(mu_);
        return object_;
    }
    std::thread::id thread() const
    {
        std::lock_guard lock(mu_);
        return thread_;
    }

private:
    void hit(NTSTATUS status, NDK_OBJECT_HEADER *object)
    {
        if (log_)
            log_->add(name_);
        if (during)
            during();
        {
            std::lock_guard lock(mu_);
            ++count_;
            status_ = status;
            object_ = object;
            thread_ = std::this_thread::get_id();
        }
        cv_.notify_all();
        if (log_)
            log_->add(name_ + ":end");
    }

    mutable std::mutex mu_;
    mutable std::condition_variable cv_;
    int count_ = 0;
    NTSTATUS status_ = kNoStatus;
    NDK_OBJECT_HEADER *object_ = nullptr;
    std::thread::id thread_;
    EventLog *log_ = nullptr;
    std::string name_;
};

inline void ignore_cq_notification(PVOID, NTSTATUS) {}
inline void ignore_srq_notification(PVOID, NTSTATUS) {}
inline void ignore_connect_event(PVOID, NDK_CONNECTOR *) {}

inline NDK_FN_CLOSE_OBJECT close_fn(NDK_CQ *o) { return o->Dispatch->NdkCloseCq; }
inline NDK_FN_CLOSE_OBJECT close_fn(NDK_PD *o) { return o->Dispatch->NdkClosePd; }
inline NDK_FN_CLOSE_OBJECT close_fn(NDK_MR *o) { return o->Dispatch->NdkCloseMr; }
inline NDK_FN_CLOSE_OBJECT close_fn(NDK_MW *o) { return o->Dispatch->NdkCloseMw; }
inline NDK_FN_CLOSE_OBJECT close_fn(NDK_SRQ *o) { return o->Dispatch->NdkCloseSrq; }
inline NDK_FN_CLOSE_OBJECT close_fn(NDK_QP *o) { return o->Dispatch->NdkCloseQp; }
inline NDK_FN_CLOSE_OBJECT close_fn(NDK_CONNECTOR *o) { return o->Dispatch->NdkCloseConnector; }
inline NDK_FN_CLOSE_OBJECT close_fn(NDK_LISTENER *o) { return o->Dispatch->NdkCloseListener; }
inline NDK_FN_CLOSE_OBJECT close_fn(NDK_SHARED_ENDPOINT *o)
{
    return o->Dispatch->NdkCloseSharedEndpoint;
}

// NdkCloseXxx with a recorded close completion.
template <class T>
NTSTATUS close_with(T *object, Record &record)
{
    return close_fn(object)(&object->Header, Record::close, &record);
}

// An NDK adapter opened through a provider's entry, as NDIS would.  Every recorder it hands
// out lives until after the adapter's blocking close, so no callback can outlive its record.
class RawAdapter : public ndk::RawAdapter {
public:
    // With `validate`, the provider is wrapped in the validation layer (session() is then its
    // record).
    explicit RawAdapter(const std::string &options = "", NDK_VERSION version = {2, 0},
                        const std::string &provider = "soft", bool validate = false)
        : ndk::RawAdapter(options, version, provider, validate),
          session_(ndk::validate::session_of(this->provider(), miniport()))
    {
    }
    ~RawAdapter() override { close(); }

    // What the validation layer recorded (nullptr without validation); outlives close().
    ndk::validate::Session *session() const { return session_.get(); }

    // Open every gate (so a callback held in one returns), then close the adapter.
    void close()
    {
        for (auto &gate : gates_)
            gate->open();
        close_adapter();
    }

    NTSTATUS set(const std::string &key, const std::string &value)
    {
        std::string reply;
        return control(key, value.c_str(), reply);
    }
    std::string knob(const std::string &key)
    {
        std::string reply;
        NTSTATUS status = control(key, nullptr, reply);
        EXPECT_STATUS(STATUS_SUCCESS, status) << key;
        return reply;
    }

    NDK_ADAPTER_INFO info()
    {
        NDK_ADAPTER_INFO info{};
        ULONG size = sizeof info;
        NTSTATUS status = d().NdkQueryAdapterInfo(adapter_, &info, &size);
        EXPECT_STATUS(STATUS_SUCCESS, status);
        return info;
    }

    // A recorder that outlives every callback of this adapter.
    Record &record(EventLog *log = nullptr, const std::string &name = {})
    {
        std::lock_guard lock(mu_);
        records_.push_back(log ? std::make_unique<Record>(log, name) : std::make_unique<Record>());
        return *records_.back();
    }

    // The soft provider's adapter under the layers (the fault layer, and the validation layer
    // when there is one).
    ndk::soft::SoftAdapter &soft_adapter()
    {
        void *object = adapter_;
        if (session_ != nullptr)
            object = ndk::validate::Shadow::of(object).real();
        ndk::fault::Face *face = ndk::fault::face_of(object);
        EXPECT_NE(face, nullptr) << "not behind the fault layer";
        EXPECT_EQ(provider().name(), "soft") << "the engine helpers need the soft provider";
        return *ndk::soft::SoftAdapter::from(reinterpret_cast<NDK_ADAPTER *>(face->inner));
    }

    // Every callback the provider queued before this call has run (a job behind them on the
    // soft provider's engine, which is FIFO), and then every completion the fault layer queued:
    // an injected asynchronous failure of NdkCreateConnector completes behind them.
    void barrier()
    {
        // Shared: the engine may still be inside open() when wait() returns here.
        auto done = std::make_shared<Gate>();
        soft_adapter().deliver([done] { done->open(); });
        done->wait();
        ASSERT_STATUS(STATUS_SUCCESS,
                      set("fail", "NdkCreateConnector STATUS_INSUFFICIENT_RESOURCES async 1"));
        Record &r = record();
        NDK_CONNECTOR *out = nullptr;
        ASSERT_STATUS(STATUS_PENDING, d().NdkCreateConnector(adapter_, Record::create, &r, &out));
        ASSERT_TRUE(r.wait()) << "engine barrier timed out";
    }

    // Hold the soft provider's callback thread (its engine) until the returned gate opens
    // (close() opens every gate first).
    Gate &block()
    {
        gates_.push_back(std::make_unique<Gate>());
        Gate &gate = *gates_.back();
        soft_adapter().deliver([&gate] { gate.wait(); });
        return gate;
    }

    // ---- Creation helpers: inline or pending, they return the object (nullptr on failure).
    // (`status` is computed before the call: `out` is read after the create returned.)
    template <class T>
    T *finish(NTSTATUS status, Record &r, T *out, const char *what)
    {
        if (status == STATUS_SUCCESS)
            return out;
        if (status == STATUS_PENDING) {
            if (!r.wait()) {
                ADD_FAILURE() << what << ": the create completion never came";
                return nullptr;
            }
            if (r.status() != STATUS_SUCCESS) {
                ADD_FAILURE() << what << " completed with " << ndk::describe_status(r.status());
                return nullptr;
            }
            return reinterpret_cast<T *>(r.object());
        }
        ADD_FAILURE() << what << " returned " << ndk::describe_status(status);
        return nullptr;
    }

    NDK_CQ *cq(ULONG depth = 64, Record *notify = nullptr)
    {
        Record &r = record();
        NDK_CQ *out = nullptr;
        NTSTATUS s =
            d().NdkCreateCq(adapter_, depth, notify ? Record::notify : ignore_cq_notification,
                            notify, nullptr, Record::create, &r, &out);
        return finish(s, r, out, "NdkCreateCq");
    }
    NDK_PD *pd()
    {
        Record &r = record();
        NDK_PD *out = nullptr;
        NTSTATUS s = d().NdkCreatePd(adapter_, Record::create, &r, &out);
        return finish(s, r, out, "NdkCreatePd");
    }
    NDK_MR *mr(NDK_PD *pd, bool fast_register)
    {
        Record &r = record();
        NDK_MR *out = nullptr;
        NTSTATUS s =
            pd->Dispatch->NdkCreateMr(pd, fast_register ? TRUE : FALSE, Record::create, &r, &out);
        return finish(s, r, out, "NdkCreateMr");
    }
    NDK_MW *mw(NDK_PD *pd)
    {
        Record &r = record();
        NDK_MW *out = nullptr;
        NTSTATUS s = pd->Dispatch->NdkCreateMw(pd, Record::create, &r, &out);
        return finish(s, r, out, "NdkCreateMw");
    }
    NDK_SRQ *srq(NDK_PD *pd, ULONG depth = 64, ULONG sge = 4, ULONG threshold = 0,
                 Record *notify = nullptr)
    {
        Record &r = record();
        NDK_SRQ *out = nullptr;
        NTSTATUS s = pd->Dispatch->NdkCreateSrq(pd, depth, sge, threshold,
                                                notify ? Record::notify : ignore_srq_notification,
                                                notify, nullptr, Record::create, &r, &out);
        return finish(s, r, out, "NdkCreateSrq");
    }
    NDK_QP *qp(NDK_PD *pd, NDK_CQ *rcq, NDK_CQ *icq, PVOID context = nullptr, ULONG rdepth = 16,
               ULONG idepth = 16, ULONG rsge = 4, ULONG isge = 4, ULONG inline_size = 0)
    {
        Record &r = record();
        NDK_QP *out = nullptr;
        NTSTATUS s = pd->Dispatch->NdkCreateQp(pd, rcq, icq, context, rdepth, idepth, rsge, isge,
                                               inline_size, Record::create, &r, &out);
        return finish(s, r, out, "NdkCreateQp");
    }
    NDK_QP *qp_srq(NDK_PD *pd, NDK_CQ *rcq, NDK_CQ *icq, NDK_SRQ *srq, PVOID context = nullptr,
                   ULONG idepth = 16, ULONG isge = 4, ULONG inline_size = 0)
    {
        Record &r = record();
        NDK_QP *out = nullptr;
        NTSTATUS s = pd->Dispatch->NdkCreateQpWithSrq(pd, rcq, icq, srq, context, idepth, isge,
                                                      inline_size, Record::create, &r, &out);
        return finish(s, r, out, "NdkCreateQpWithSrq");
    }
    NDK_CONNECTOR *connector()
    {
        Record &r = record();
        NDK_CONNECTOR *out = nullptr;
        NTSTATUS s = d().NdkCreateConnector(adapter_, Record::create, &r, &out);
        return finish(s, r, out, "NdkCreateConnector");
    }
    NDK_LISTENER *listener()
    {
        Record &r = record();
        NDK_LISTENER *out = nullptr;
        NTSTATUS s = d().NdkCreateListener(adapter_, ignore_connect_event, nullptr, Record::create,
                                           &r, &out);
        return finish(s, r, out, "NdkCreateListener");
    }

    // Close and wait for the close to complete.
    template <class T>
    void close_now(T *object)
    {
        Record &r = record();
        NTSTATUS s = close_with(object, r);
        if (s == STATUS_PENDING)
            EXPECT_TRUE(r.wait()) << "close completion never came";
        else
            EXPECT_STATUS(STATUS_SUCCESS, s);
    }

private:
    std::shared_ptr<ndk::validate::Session> session_;
    std::mutex mu_;
    std::list<std::unique_ptr<Record>> records_;
    std::vector<std::unique_ptr<Gate>> gates_;
};

// An MDL chain over made-up addresses (a provider never dereferences an MDL's address).
class MdlChain {
public:
    // One element per {address, length}; each element's StartVa is the page of its address.
    explicit MdlChain(std::vector<std::pair<uintptr_t, ULONG>> pieces)
    {
        elements_.resize(pieces.size());
        for (size_t i = 0; i < pieces.size(); ++i)
            NdkInitializeMdl(&elements_[i], reinterpret_cast<PVOID>(pieces[i].first),
                             pieces[i].second);
        for (size_t i = 0; i + 1 < elements_.size(); ++i)
            elements_[i].Next = &elements_[i + 1];
    }
    MDL *get() { return elements_.empty() ? nullptr : elements_.data(); }
    MDL &operator[](size_t i) { return elements_[i]; }

private:
    std::vector<MDL> elements_;
};

// The start of 16 MiB of anonymous writable memory (reserved, never touched unless a test writes
// it) that the tests' MDL ranges describe: a provider checks that a registered range is mapped,
// and writable when the access flags allow writes (docs/semantics.md, MR-WRITABLE).
uintptr_t test_memory();
inline const uintptr_t kTestVa = test_memory();

// `pages` pages of anonymous memory mapped with `prot` (PROT_READ: a read-only mapping), unmapped
// at the end of the scope.
class Mapping {
public:
    Mapping(size_t pages, int prot);
    ~Mapping();
    Mapping(const Mapping &) = delete;
    Mapping &operator=(const Mapping &) = delete;
    uintptr_t address() const { return reinterpret_cast<uintptr_t>(base_); }
    size_t size() const { return size_; }

private:
    void *base_;
    size_t size_;
};

} // namespace ndktest
