// How the UCX transport moves the bytes of this process's transfers (MEMLOOM_UCX_DATA_PATH):
//
//   rma  ucp_put_nbx/ucp_get_nbx with remote keys (ucx_transport.cpp): one-sided, the NIC moves
//        the bytes where UCX has an RDMA transport. Without one UCX emulates RMA in software: its
//        handlers check no remote key, and UCX 1.13 aborts the serving process when a peer's links
//        are cut mid-put.
//   am   active messages that memloom serves itself (ucx_am_requests.h, ucx_am_server.h): every
//        range checked against the exposed regions, the copy done by the owner.
//   auto (the default) rma where UCX offers an RDMA transport (ucx_capabilities.h), else am.
//
// The requester chooses. Every transport serves am; rma only where UCX has an RDMA transport or rma
// was asked for; an rma requester moves to am for a peer that refuses remote keys. Device memory
// that a transport stages (its UCX has no CUDA support) moves on am only.
#pragma once

namespace memloom::host {

enum class UcxDataPath { kRma, kAm };

// The path MEMLOOM_UCX_DATA_PATH picks here (kInvalidInput for a value that names none).
UcxDataPath chosen_ucx_data_path();

inline const char* ucx_data_path_name(UcxDataPath path) {
  return path == UcxDataPath::kAm ? "am" : "rma";
}

}  // namespace memloom::host
