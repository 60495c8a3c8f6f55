// memloom.wholememory graph operations (wholememory/graph_op.h) that run on arrays the caller
// allocates: csr_add_self_loop writes its output CSR in place.
#include <pybind11/pybind11.h>

#include "blocking_call.h"
#include "errors.h"
#include "wholememory/graph_op.h"
#include "wholememory_objects.h"

namespace memloom::python {

namespace {

void add_self_loop(py::handle row_ptr, py::handle col, py::handle output_row_ptr,
                   py::handle output_col) {
  BorrowedTensor rows(describe(row_ptr, "csr_row_ptr"), 1, "csr_row_ptr");
  BorrowedTensor cols(describe(col, "csr_col_ptr"), 1, "csr_col_ptr");
  BorrowedTensor out_rows(describe(output_row_ptr, "output_csr_row_ptr"), 1, "output_csr_row_ptr");
  BorrowedTensor out_cols(describe(output_col, "output_csr_col_ptr"), 1, "output_csr_col_ptr");
  const Outcome outcome = call_released([&] {
    return outcome_of(
        csr_add_self_loop(rows.get(), cols.get(), out_rows.get(), out_cols.get(), nullptr));
  });
  check(outcome, "csr_add_self_loop");
}

}  // namespace

void bind_graph_op(py::module_& m) {
  m.def("csr_add_self_loop", &add_self_loop, py::arg("csr_row_ptr"), py::arg("csr_col_ptr"),
        py::arg("output_csr_row_ptr"), py::arg("output_csr_col_ptr"),
        "Writes the CSR with a self loop first in every row (INT32 arrays; the output has "
        "rows + 1 row pointers and edges + rows columns).");
}

}  // namespace memloom::python
