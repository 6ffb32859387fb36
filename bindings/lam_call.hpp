// ndk.LamCall, the ndk.Call of an NdkBuildLAM (bind_lam.cpp), and the build that makes one,
// for ndk.Adapter.build_lam (bind_adapter.cpp).
#pragma once

#include "mdl.hpp"
#include "py_support.hpp"

#include "ndk/lam.hpp"
#include "ndk/objects.hpp"

#include <optional>

namespace ndk::py {

struct LamCall : Call {
    LamCall(Call call, std::shared_ptr<Lam> lam) : Call(std::move(call)), lam(std::move(lam)) {}
    std::shared_ptr<Lam> lam;
};

// NdkBuildLAM over `mdl`, with the GIL released; length None: the MDL's whole length.
LamCall build_lam(Adapter &a, const PyMdl &mdl, std::optional<SIZE_T> length,
                  std::optional<ULONG> lam_size);

} // namespace ndk::py
