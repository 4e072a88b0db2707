// Placeholder until I/O lands.
#include <simkit/error.hpp>
#include <simkit/io.hpp>
namespace simkit {
Matrix<float> read_matrix(const std::string&) { throw Error(ErrorCode::unsupported, "not yet"); }
Matrix<int64_t> read_ids(const std::string&) { throw Error(ErrorCode::unsupported, "not yet"); }
void write_matrix(const std::string&, MatrixView<const float>) { throw Error(ErrorCode::unsupported, "not yet"); }
void write_ids(const std::string&, MatrixView<const int64_t>) { throw Error(ErrorCode::unsupported, "not yet"); }
void write_atomically(const std::string&, const std::function<void(const std::string&)>&) {
  throw Error(ErrorCode::unsupported, "not yet");
}
}  // namespace simkit
