// Writes a test NEFF for the fake libnrt: the real container (header and
// gzip tar) around a neff.json that names one small operation
// (tests/fake_nrt/fake_model.h).
//
//   make_test_neff OUT.neff NAME OP SHAPE [FACTOR]
//
// OP is copy, add, scale or matmul; SHAPE is ROWSxCOLUMNS (matmul: the
// inputs are ROWSxCOLUMNS and COLUMNSxROWS). Inputs are named "a" and "b",
// the output "out".
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "daemon/exec/neff_container.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: make_test_neff OUT.neff NAME OP ROWSxCOLUMNS [FACTOR]\n");
    return 2;
  }
  const std::string op = argv[3];
  std::vector<std::string> shape = absl::StrSplit(argv[4], 'x');
  int rows = 0, columns = 0;
  if (shape.size() != 2 || !absl::SimpleAtoi(shape[0], &rows) ||
      !absl::SimpleAtoi(shape[1], &columns)) {
    std::fprintf(stderr, "make_test_neff: SHAPE is ROWSxCOLUMNS, not %s\n", argv[4]);
    return 2;
  }
  auto tensor = [](const char* name, const char* usage, int r, int c) {
    return absl::StrFormat(R"({"name": "%s", "usage": "%s", "dtype": "float32", "shape": [%d, %d]})",
                           name, usage, r, c);
  };
  std::string io = tensor("a", "input", rows, columns);
  if (op == "add") io += ", " + tensor("b", "input", rows, columns);
  if (op == "matmul") io += ", " + tensor("b", "input", columns, rows);
  io += ", " + tensor("out", "output", rows, op == "matmul" ? rows : columns);
  const std::string json = absl::StrFormat(R"({"io": [%s], "op": "%s", "factor": %s})", io, op,
                                           argc > 5 ? argv[5] : "1.0");
  const std::string neff = neuron::rtd::exec::WriteNeff(
      argv[2], /*lnc_size=*/2, {{.name = "neff.json", .data = json}});
  std::ofstream out(argv[1], std::ios::binary);
  out.write(neff.data(), static_cast<std::streamsize>(neff.size()));
  return out.good() ? 0 : 1;
}
