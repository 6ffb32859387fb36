// ndk.Lam and ndk.LamCall: logical address mappings (NdkBuildLAM / NdkReleaseLAM, digest
// 1.1, 2.4).  build_lam returns an ndk.LamCall: an ndk.Call whose get() gives the ndk.Lam.
#include "lam_call.hpp"

#include "ndk/status.hpp"

#include <pybind11/stl.h>

namespace ndk::py {

LamCall build_lam(Adapter &a, const PyMdl &mdl, std::optional<SIZE_T> length,
                  std::optional<ULONG> lam_size)
{
    require_writable(mdl, "the privileged token's logical addresses");
    auto [call, lam] = released([&] {
        return a.build_lam(mdl.chain, length.value_or(mdl.total), lam_size, mdl.keepalive);
    });
    return LamCall(call, lam);
}

namespace {

void check_mapped(const Lam &lam)
{
    if (!lam.mapped())
        throw pyb::value_error("the LAM is not mapped (not built yet, failed, or released): " +
                               status_name(lam.status()));
}

std::string lam_repr(const Lam &lam)
{
    if (!lam.done())
        return "<ndk.Lam building>";
    if (!lam.mapped())
        return "<ndk.Lam " + status_name(lam.status()) + " lam_size=" +
               std::to_string(lam.lam_size()) + (lam.status() == STATUS_SUCCESS ? " released>" : ">");
    return "<ndk.Lam pages=" + std::to_string(lam.adapter_page_array().size()) +
           " fbo=" + std::to_string(lam.fbo()) + ">";
}

} // namespace

void bind_lam(pyb::module_ &m)
{
    pyb::class_<Lam, std::shared_ptr<Lam>>(m, "Lam", R"doc(
An NDK_LOGICAL_ADDRESS_MAPPING built by adapter.build_lam (NdkBuildLAM, digest 1.1, 2.4): the
adapter pages of a buffer, named in SGEs under pd.get_privileged_memory_region_token().  The
buffer stays alive while mapped; release() (or dropping the Lam) calls NdkReleaseLAM.
)doc")
        .def_property_readonly("status", [](const Lam &l) { return Status{l.status()}; },
                               "What the build returned (STATUS_PENDING until it completed).")
        .def_property_readonly("lam_size", &Lam::lam_size,
                               "*pLAMSize after the build (the size needed after BUFFER_TOO_SMALL).")
        .def_property_readonly("fbo", &Lam::fbo, "*pFBO: the buffer's offset in its first page.")
        .def_property_readonly(
            "adapter_page_array",
            [](const Lam &l) {
                check_mapped(l);
                std::vector<uint64_t> pages;
                for (const auto &page : l.adapter_page_array())
                    pages.push_back(static_cast<uint64_t>(page.QuadPart));
                return pages;
            },
            "The logical address of each page (ints), once built; ValueError otherwise.")
        .def_property_readonly(
            "adapter_page_count",
            [](const Lam &l) {
                check_mapped(l);
                return l.adapter_page_array().size();
            },
            "AdapterPageCount (the pages in adapter_page_array).")
        .def_property_readonly("mapped", &Lam::mapped, "Built successfully and not released.")
        .def("release",
             [](Lam &lam) {
                 released([&] { lam.release(); });
                 let_go_now(); // the buffer is usable again when this returns
             },
             "NdkReleaseLAM (once; nothing if not mapped).  No work request may still use it.")
        .def("__repr__", &lam_repr);

    pyb::class_<LamCall, Call>(m, "LamCall", "The ndk.Call of an NdkBuildLAM; get() returns "
                                             "the ndk.Lam.")
        .def_readonly("lam", &LamCall::lam, "The ndk.Lam (fields valid once the call is done).")
        .def(
            "get",
            [](const pyb::object &self, pyb::object timeout) {
                const LamCall &c = self.cast<const LamCall &>();
                double seconds = timeout.is_none() ? -1.0 : timeout_of(timeout).count();
                release_deferred();
                if (!wait_released(self, c, seconds))
                    raise_call_timeout(self, timeout);
                if (c.result() != STATUS_SUCCESS)
                    throw Error(c.result(), "NdkBuildLAM");
                return c.lam;
            },
            pyb::arg("timeout") = pyb::none(),
            "Wait (TimeoutError after `timeout` seconds), then return the ndk.Lam or raise "
            "ndk.NdkError with the final status.");
}

} // namespace ndk::py
