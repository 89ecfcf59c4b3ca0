// Fashion-MNIST in its IDX files (the format of yann.lecun.com/exdb/mnist: big-endian magic 0x000008TD with
// T the element type (0x08 unsigned byte) and D the number of dimensions, then D big-endian uint32 sizes,
// then the elements), gzip-compressed or plain.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gwtrain {

// A data set file is missing or malformed; what() names the file and what to do.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An IDX array of unsigned bytes.
struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;
};

// Reads an IDX file of unsigned bytes (gzip-compressed or not) and checks its magic, its dimension count
// against `expected_rank`, and that the file holds exactly the elements its header announces.
IdxArray read_idx(const std::string& path, uint32_t expected_rank);

// One split of the data set: `count` images of rows x cols bytes, one label (0..9) each.
struct Split {
  uint32_t count = 0;
  uint32_t rows = 0;
  uint32_t cols = 0;
  std::vector<uint8_t> images;  // count * rows * cols, image after image
  std::vector<uint8_t> labels;  // count
  uint32_t pixels() const { return rows * cols; }
};

struct Dataset {
  Split train;
  Split test;
};

// Where the Debian package dataset-fashion-mnist installs the files.
inline constexpr const char* kDefaultDataDir = "/usr/share/datasets/fashion-mnist";

// Loads {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] from `dir`: images and labels must agree in
// count, labels must be 0..9. A missing directory or file names the Debian package and --data.
Dataset load_fashion_mnist(const std::string& dir);
// One split of it ("train" or "t10k"), checked the same way.
Split load_fashion_mnist_split(const std::string& dir, const std::string& prefix);

// Part of a split, for readers that hold only a shard of it (the data cache): the file of
// PREFIX-images-idx3-ubyte or PREFIX-labels-idx1-ubyte (.gz first), its sizes from the header, and
// `bytes` bytes starting at element `offset` (gzip files are decompressed up to there).
std::string fashion_mnist_file(const std::string& dir, const std::string& name);
std::vector<uint32_t> read_idx_dims(const std::string& path, uint32_t expected_rank);
void read_idx_range(const std::string& path, uint32_t rank, uint64_t offset, uint64_t bytes, void* out);

}  // namespace gwtrain
