// A logical address mapping (NdkBuildLAM / NdkReleaseLAM, digest 1.1, 2.4): adapter pages for a
// range of memory, which SGEs name under the PD's privileged token.  Not an NDK object (no
// header, no close): the handle releases the mapping when the last reference goes.
#pragma once

#include "ndk/objects.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace ndk {

class Lam {
public:
    // Storage for a mapping of `lam_size` bytes (*pLAMSize) over `chain`; `keepalive` holds the
    // mapped memory until the mapping is released.  Built by Adapter::build_lam.
    Lam(std::shared_ptr<Adapter> adapter, std::vector<MDL> chain, SIZE_T length, ULONG lam_size,
        std::shared_ptr<void> keepalive);
    ~Lam();
    Lam(const Lam &) = delete;
    Lam &operator=(const Lam &) = delete;

    // The bytes of *pLAMSize for [address, address + length) from `fbo`: the mapping header
    // and one NDK_LOGICAL_ADDRESS per page touched.
    static ULONG size_for(uintptr_t address, SIZE_T length);

    // Once the build completed (any status): what it returned, and what the provider wrote to
    // *pLAMSize and *pFBO (the size needed, after BUFFER_TOO_SMALL).  Before: PENDING, 0, 0
    // (the provider may be writing them).
    bool done() const;
    NTSTATUS status() const;
    ULONG lam_size() const;
    ULONG fbo() const;
    // After a successful build: the mapping's pages.  Throws std::logic_error otherwise.
    std::vector<NDK_LOGICAL_ADDRESS> adapter_page_array() const;
    // NdkReleaseLAM, once, if the build succeeded and the adapter is open; the memory is then
    // no longer held.
    void release();
    bool mapped() const;

private:
    friend class Adapter;
    NDK_LOGICAL_ADDRESS_MAPPING *mapping();
    void finished(NTSTATUS status); // the build's completion (or inline return)

    std::shared_ptr<Adapter> adapter_;
    std::vector<MDL> chain_;
    SIZE_T length_;
    std::vector<uint64_t> storage_; // the NDK_LOGICAL_ADDRESS_MAPPING, 8-byte aligned
    ULONG lam_size_;                // *pLAMSize: the buffer's size in, the provider's answer out
    ULONG fbo_ = 0;                 // *pFBO
    std::shared_ptr<void> keepalive_;
    mutable std::mutex mu_;
    // Published by finished(), under mu_: the provider writes the fields above until then.
    ULONG done_lam_size_ = 0;
    ULONG done_fbo_ = 0;
    bool done_ = false;
    bool mapped_ = false;
    NTSTATUS status_ = STATUS_PENDING;
};

} // namespace ndk
