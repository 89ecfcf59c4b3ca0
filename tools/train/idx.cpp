#include "idx.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace gwtrain {
namespace {

namespace fs = std::filesystem;

constexpr uint8_t kUnsignedByte = 0x08;
// The largest array we accept: a corrupt size field must not make us allocate gigabytes.
constexpr uint64_t kMaxElements = uint64_t(1) << 31;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

// Reads exactly n bytes (gzread reads plain files as they are); false at a premature end.
bool read_exact(gzFile f, void* out, size_t n, const std::string& path) {
  auto* p = static_cast<unsigned char*>(out);
  while (n > 0) {
    const unsigned chunk = unsigned(std::min<size_t>(n, size_t(1) << 30));
    const int got = gzread(f, p, chunk);
    if (got < 0) {
      int errnum = 0;
      const char* msg = gzerror(f, &errnum);
      throw DataError(path + ": cannot read: " + (errnum == Z_ERRNO ? std::strerror(errno) : msg) +
                      " (a damaged download? reinstall dataset-fashion-mnist or give another --data)");
    }
    if (got == 0) return false;
    p += got;
    n -= size_t(got);
  }
  return true;
}

uint32_t big_endian(const unsigned char* b) {
  return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | uint32_t(b[3]);
}

std::string corrupt(const std::string& path, const std::string& what) {
  return path + ": not a valid IDX file: " + what +
         " (reinstall dataset-fashion-mnist, or point --data at a directory with intact files)";
}

// The file's path: NAME.gz if present, else NAME.
std::string find_file(const std::string& dir, const std::string& name) {
  for (const std::string& candidate : {dir + "/" + name + ".gz", dir + "/" + name})
    if (fs::exists(candidate)) return candidate;
  throw DataError("the Fashion-MNIST file " + name + "[.gz] is not in " + dir +
                  ": install the Debian package dataset-fashion-mnist (scripts/install-deps.sh does), "
                  "or give the directory holding the four IDX files with --data DIR");
}

Split load_split(const std::string& dir, const std::string& prefix) {
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");
  IdxArray images = read_idx(images_path, 3);
  IdxArray labels = read_idx(labels_path, 1);
  if (images.dims[0] != labels.dims[0])
    throw DataError(images_path + " holds " + std::to_string(images.dims[0]) + " images but " + labels_path +
                    " holds " + std::to_string(labels.dims[0]) + " labels; they must come from the same release");
  for (size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] > 9)
      throw DataError(corrupt(labels_path, "label " + std::to_string(i) + " is " + std::to_string(labels.data[i]) +
                                               ", Fashion-MNIST labels are 0..9"));
  Split s;
  s.count = images.dims[0];
  s.rows = images.dims[1];
  s.cols = images.dims[2];
  s.images = std::move(images.data);
  s.labels = std::move(labels.data);
  return s;
}

// Opens the file and checks its header; the sizes go to `dims`.
std::unique_ptr<gzFile_s, GzCloser> open_idx(const std::string& path, uint32_t expected_rank, std::vector<uint32_t>& dims) {
  std::unique_ptr<gzFile_s, GzCloser> f(gzopen(path.c_str(), "rb"));
  if (!f) throw DataError(path + ": cannot open: " + std::strerror(errno));
  unsigned char magic[4];
  if (!read_exact(f.get(), magic, 4, path)) throw DataError(corrupt(path, "shorter than its 4-byte magic"));
  if (magic[0] != 0 || magic[1] != 0)
    throw DataError(corrupt(path, "bad magic (the first two bytes must be zero)"));
  if (magic[2] != kUnsignedByte)
  {
    char type[8];
    std::snprintf(type, sizeof(type), "0x%02x", magic[2]);
    throw DataError(corrupt(path, std::string("element type ") + type + " where unsigned bytes (0x08) are expected"));
  }
  if (magic[3] != expected_rank)
    throw DataError(corrupt(path, std::to_string(magic[3]) + " dimensions where " + std::to_string(expected_rank) +
                                      " are expected"));
  dims.resize(expected_rank);
  uint64_t elements = 1;
  for (uint32_t d = 0; d < expected_rank; ++d) {
    unsigned char b[4];
    if (!read_exact(f.get(), b, 4, path)) throw DataError(corrupt(path, "the header ends inside the dimension sizes"));
    dims[d] = big_endian(b);
    if (dims[d] == 0) throw DataError(corrupt(path, "dimension " + std::to_string(d) + " is 0"));
    elements *= dims[d];
    if (elements > kMaxElements) throw DataError(corrupt(path, "the dimensions announce more than 2^31 elements"));
  }
  return f;
}

}  // namespace

std::vector<uint32_t> read_idx_dims(const std::string& path, uint32_t expected_rank) {
  std::vector<uint32_t> dims;
  open_idx(path, expected_rank, dims);
  return dims;
}

void read_idx_range(const std::string& path, uint32_t rank, uint64_t offset, uint64_t bytes, void* out) {
  std::vector<uint32_t> dims;
  auto f = open_idx(path, rank, dims);
  uint64_t elements = 1;
  for (uint32_t d : dims) elements *= d;
  if (offset + bytes > elements)
    throw DataError(path + ": bytes [" + std::to_string(offset) + ", " + std::to_string(offset + bytes) +
                    ") are past its " + std::to_string(elements) + " elements");
  if (gzseek(f.get(), z_off_t(4 + 4 * rank + offset), SEEK_SET) < 0) throw DataError(path + ": cannot seek");
  if (!read_exact(f.get(), out, bytes, path)) throw DataError(corrupt(path, "truncated"));
}

std::string fashion_mnist_file(const std::string& dir, const std::string& name) { return find_file(dir, name); }

Split load_fashion_mnist_split(const std::string& dir, const std::string& prefix) { return load_split(dir, prefix); }

IdxArray read_idx(const std::string& path, uint32_t expected_rank) {
  IdxArray a;
  auto f = open_idx(path, expected_rank, a.dims);
  uint64_t elements = 1;
  for (uint32_t d : a.dims) elements *= d;
  a.data.resize(elements);
  if (!read_exact(f.get(), a.data.data(), a.data.size(), path))
    throw DataError(corrupt(path, "truncated: the header announces " + std::to_string(elements) +
                                      " elements and the file ends before them"));
  unsigned char extra;
  if (read_exact(f.get(), &extra, 1, path))
    throw DataError(corrupt(path, "more data after the " + std::to_string(elements) + " elements its header announces"));
  return a;
}

Dataset load_fashion_mnist(const std::string& dir) {
  if (!fs::is_directory(dir))
    throw DataError("the Fashion-MNIST directory " + dir +
                    " does not exist: install the Debian package dataset-fashion-mnist (scripts/install-deps.sh "
                    "does), or give the directory holding the four IDX files with --data DIR");
  Dataset d;
  d.train = load_split(dir, "train");
  d.test = load_split(dir, "t10k");
  if (d.train.rows != d.test.rows || d.train.cols != d.test.cols)
    throw DataError("the training images in " + dir + " are " + std::to_string(d.train.rows) + "x" +
                    std::to_string(d.train.cols) + " but the test images " + std::to_string(d.test.rows) + "x" +
                    std::to_string(d.test.cols) + "; both splits must come from the same data set");
  return d;
}

}  // namespace gwtrain
