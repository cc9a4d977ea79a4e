// shardgate._native: thin bindings of the runtime library. The Python package
// (validators/python/shardgate/) wraps them; nothing here decides a verdict on its own.
#include "py_convert.h"

namespace py = pybind11;

PYBIND11_MODULE(_native, m) {
  m.doc() = "shardgate runtime bindings (use the 'shardgate' package)";
  m.attr("__version__") = SG_VERSION;
  // Library errors become shardgate.Error (defined in Python, shardgate/_errors.py) with the
  // library's message and the exit code the CLIs would use (2 bad input, 3 internal).
  // The type object is kept for the life of the process on purpose.
  static PyObject* error_type =
      py::object(py::module_::import("shardgate._errors").attr("Error")).release().ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const sgpy::NativeError& e) {
      py::object exc = py::reinterpret_borrow<py::object>(error_type)(e.what(), e.exit_code());
      PyErr_SetObject(error_type, exc.ptr());
    }
  });
  sgpy::bind_shard(m);
  sgpy::bind_chain(m);
  sgpy::bind_metrics(m);
}
