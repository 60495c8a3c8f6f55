// _memloom_native: the one extension module behind the memloom, memfabric_hybrid and
// pylibwholegraph packages (their Python files re-export and adapt it).
#include <pybind11/pybind11.h>

#include "array_ref.h"
#include "blocking_call.h"
#include "errors.h"
#include "memloom/stream.h"
#include "smem_common.h"
#include "wholememory_objects.h"

namespace py = pybind11;
namespace mp = memloom::python;

namespace {

// memloom/stream.h: ordered asynchronous work on either backend (TRANS *_submit takes .handle).
class Stream {
 public:
  Stream() {
    if (memloom_stream_create(&stream_) != MEMLOOM_STATUS_SUCCESS) {
      throw std::runtime_error("memloom_stream_create failed: " + mp::take_failure_message());
    }
  }
  ~Stream() {
    if (stream_ != nullptr) memloom_stream_destroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  uintptr_t handle() const { return reinterpret_cast<uintptr_t>(live()); }
  void synchronize() {
    memloom_stream_t stream = live();
    const auto status = mp::call_interruptibly<std::pair<int, std::string>>([stream] {
      const int code = memloom_stream_synchronize(stream);
      return std::make_pair(code, code != 0 ? mp::take_failure_message() : std::string());
    });
    if (status.first != 0) {
      throw std::runtime_error("memloom_stream_synchronize failed: " + status.second);
    }
  }
  void destroy() {
    memloom_stream_t stream = live();
    stream_ = nullptr;
    mp::call_interruptibly<int>(
        [stream] { return static_cast<int>(memloom_stream_destroy(stream)); });
  }

 private:
  memloom_stream_t live() const {
    if (stream_ == nullptr) throw std::runtime_error("the stream was destroyed");
    return stream_;
  }
  memloom_stream_t stream_ = nullptr;
};

}  // namespace

PYBIND11_MODULE(_memloom_native, m) {
  m.attr("__version__") = MEMLOOM_VERSION;
  m.doc() =
      "memloom's native bindings (use the memloom, memfabric_hybrid and pylibwholegraph "
      "packages).";
  mp::register_exit_check(m);
  mp::remember_main_thread();
  mp::View::bind(m);
  py::class_<Stream>(m, "Stream")
      .def(py::init<>())
      .def_property_readonly("handle", &Stream::handle)
      .def("synchronize", &Stream::synchronize)
      .def("destroy", &Stream::destroy);

  auto wholememory = m.def_submodule("wholememory", "The WholeMemory C API.");
  mp::bind_errors(wholememory);
  mp::bind_wholememory_comm(wholememory);
  mp::bind_wholememory_tensor(wholememory);
  mp::bind_wholememory_embedding(wholememory);
  mp::bind_wholegraph_sample(wholememory);
  mp::bind_graph_op(wholememory);

  auto smem = m.def_submodule("smem", "The MemFabric C API as memfabric_hybrid binds it.");
  mp::bind_smem_top(smem);
  auto bm = smem.def_submodule("bm", "Big Memory Module.");
  mp::bind_smem_bm(bm);
  auto shm = smem.def_submodule("shm", "Share Memory Module.");
  mp::bind_smem_shm(shm);
  mp::bind_smem_trans(smem);
}
