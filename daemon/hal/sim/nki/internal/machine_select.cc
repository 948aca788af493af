// Instructions that select, search, gather or generate: iota and the
// selects (predicated copy, affine_select, range_select, select_reduce),
// the top-8 family, stream shuffles, gathers, sequence bounds, nonzero
// indices and random numbers.
#include <ATen/ATen.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "daemon/hal/sim/nki/internal/arithmetic.h"
#include "daemon/hal/sim/nki/internal/machine.h"

namespace neuron::rtd::nki::internal {
namespace {

bool Flag(const NkiInstruction& instruction, size_t i) {
  return instruction.flags.size() > i && instruction.flags[i];
}

// The values of an affine pattern over a [P, F...] shape: offset +
// channel_multiplier * p + sum(f_k * steps[k]).
at::Tensor Affine(at::IntArrayRef shape, double offset, double channel_multiplier,
                  const std::vector<int64_t>& steps) {
  const int64_t dims = static_cast<int64_t>(shape.size());
  TORCH_CHECK(static_cast<int64_t>(steps.size()) == dims - 1, "the pattern has ", steps.size(),
              " steps for ", dims - 1, " free dimensions");
  std::vector<int64_t> column(dims, 1);
  column[0] = shape[0];
  at::Tensor values = at::arange(shape[0], at::kDouble).view(column) * channel_multiplier + offset;
  for (int64_t k = 1; k < dims; ++k) {
    std::vector<int64_t> along(dims, 1);
    along[k] = shape[k];
    values = values + at::arange(shape[k], at::kDouble).view(along) * static_cast<double>(steps[k - 1]);
  }
  return values.expand(shape);
}

// The next value of a xorshift64* generator.
uint64_t NextRandom(uint64_t& state) {
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1DULL;
}

at::Tensor UniformFloats(uint64_t& state, int64_t count) {
  at::Tensor values = at::empty({count}, at::kFloat);
  float* out = values.data_ptr<float>();
  for (int64_t i = 0; i < count; ++i) {
    out[i] = static_cast<float>(NextRandom(state) >> 40) * (1.0f / 16777216.0f);
  }
  return values;
}

}  // namespace

void Machine::Iota(const NkiInstruction& instruction) {
  const at::Tensor destination = View(*instruction.operands[0]);
  Write(*instruction.operands[0], Affine(destination.sizes(), instruction.scalars[0],
                                         instruction.scalars[1], instruction.axes));
}

void Machine::CopyPredicated(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  at::Tensor destination = View(*operands[0]);
  const at::Tensor predicate = Read(*operands[2]);
  const at::Tensor source = Read(*operands[1]);
  TORCH_CHECK(source.numel() == destination.numel() && predicate.numel() == destination.numel(),
              "dst, src and predicate have ", destination.numel(), ", ", source.numel(), " and ",
              predicate.numel(), " elements");
  Write(*operands[0], at::where(predicate.reshape(destination.sizes()).ne(0),
                                source.reshape(destination.sizes()), Read(*operands[0])));
}

void Machine::AffineSelect(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  const at::Tensor on_true = Read(*operands[1]);
  const at::Tensor destination = View(*operands[0]);
  TORCH_CHECK(on_true.numel() == destination.numel(), "on_true_tile has ", on_true.numel(),
              " elements; dst ", destination.numel());
  const at::Tensor values =
      Affine(destination.sizes(), instruction.scalars[0], instruction.scalars[1], instruction.axes);
  const at::Tensor chosen = Alu(instruction.alu[0], values.to(at::kFloat), at::zeros({}, at::kFloat));
  Write(*operands[0], at::where(chosen.ne(0), on_true.reshape(destination.sizes()),
                                FloatImmediate(instruction.scalars[2])));
}

void Machine::RangeSelect(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  const at::Tensor on_true = ReadRows(*operands[1]);
  const int64_t partitions = on_true.size(0);
  const at::Tensor index =
      (at::arange(on_true.size(1), at::kDouble) + instruction.scalars[0]).to(at::kFloat).unsqueeze(0);
  const at::Tensor inside =
      Alu(instruction.alu[0], index, Column(operands[2], 0, partitions)).ne(0).logical_and(
          Alu(instruction.alu[1], index, Column(operands[3], 0, partitions)).ne(0));
  const at::Tensor result = at::where(inside, on_true, FloatImmediate(instruction.scalars[1]));
  Write(*operands[0], result);
  const at::Tensor accumulated = vector_accumulator_.Apply(
      instruction.flags, 0, NkiAluOp::kMaximum, std::get<0>(result.max(1)), result.select(1, 0));
  if (operands[4]) Write(*operands[4], accumulated);
}

void Machine::SelectReduce(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  const at::Tensor on_true = ReadRows(*operands[2]);
  const int64_t partitions = on_true.size(0);
  at::Tensor predicate = ReadRows(*operands[1]).ne(0);
  TORCH_CHECK(predicate.numel() == on_true.numel(), "predicate has ", predicate.numel(),
              " elements; on_true ", on_true.numel());
  if (Flag(instruction, 0)) predicate = predicate.logical_not();
  const at::Tensor result = at::where(predicate.reshape(on_true.sizes()), on_true,
                                      Column(operands[3], instruction.scalars[0], partitions));
  Write(*operands[0], result);
  const at::Tensor accumulated = vector_accumulator_.Apply(
      instruction.flags, 1, NkiAluOp::kMaximum, std::get<0>(result.max(1)), result.select(1, 0));
  if (operands[4]) Write(*operands[4], accumulated);
}

void Machine::Max8(const NkiInstruction& instruction) {
  const at::Tensor rows = ReadRows(*instruction.operands[1]);
  TORCH_CHECK(rows.size(1) >= 8, "max8 reads at least 8 elements per partition; got ",
              rows.size(1));
  Write(*instruction.operands[0], std::get<0>(rows.topk(8, 1, /*largest=*/true, /*sorted=*/true)));
}

void Machine::FindIndex8(const NkiInstruction& instruction) {
  const at::Tensor data = ReadRows(*instruction.operands[1]).contiguous();
  const at::Tensor values = ReadRows(*instruction.operands[2]).contiguous();
  TORCH_CHECK(values.size(1) == 8 && values.size(0) == data.size(0),
              "nc_find_index8 finds 8 values per partition; vals is ", values.sizes());
  at::Tensor found = at::full({data.size(0), 8}, static_cast<double>(UINT32_MAX), at::kDouble);
  const float* row_data = data.const_data_ptr<float>();
  const float* row_values = values.const_data_ptr<float>();
  double* out = found.data_ptr<double>();
  const int64_t width = data.size(1);
  for (int64_t p = 0; p < data.size(0); ++p) {
    std::vector<bool> taken(width, false);
    for (int64_t j = 0; j < 8; ++j) {
      for (int64_t i = 0; i < width; ++i) {
        if (!taken[i] && row_data[p * width + i] == row_values[p * 8 + j]) {
          taken[i] = true;
          out[p * 8 + j] = static_cast<double>(i);
          break;
        }
      }
    }
  }
  Write(*instruction.operands[0], found);
}

void Machine::MatchReplace8(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  at::Tensor data = ReadRows(*operands[1]).contiguous().clone();
  const at::Tensor values = ReadRows(*operands[2]).contiguous();
  TORCH_CHECK(values.size(1) == 8 && values.size(0) == data.size(0),
              "nc_match_replace8 matches 8 values per partition; vals is ", values.sizes());
  at::Tensor indices = at::zeros({data.size(0), 8}, at::kDouble);
  float* row_data = data.data_ptr<float>();
  const float* row_values = values.const_data_ptr<float>();
  double* out = indices.data_ptr<double>();
  const int64_t width = data.size(1);
  const float replacement = RoundToFloat(instruction.scalars[0]);
  for (int64_t p = 0; p < data.size(0); ++p) {
    std::vector<bool> taken(width, false);
    // The values from the last to the first, each taking the first
    // position still unmatched (nki.isa's documented order).
    for (int64_t j = 7; j >= 0; --j) {
      for (int64_t i = 0; i < width; ++i) {
        if (!taken[i] && row_data[p * width + i] == row_values[p * 8 + j]) {
          taken[i] = true;
          out[p * 8 + j] = static_cast<double>(i);
          break;
        }
      }
    }
    for (int64_t i = 0; i < width; ++i) {
      if (taken[i]) row_data[p * width + i] = replacement;
    }
  }
  Write(*operands[0], data);
  if (operands[3]) Write(*operands[3], indices);
}

void Machine::StreamShuffle(const NkiInstruction& instruction) {
  TORCH_CHECK(DtypeOf(*instruction.operands[0]) == DtypeOf(*instruction.operands[1]),
              "nc_stream_shuffle moves data of one dtype");
  const at::Tensor source = View(*instruction.operands[1]);
  const at::Tensor source_rows = source.reshape({source.size(0), -1}).clone();
  at::Tensor destination = View(*instruction.operands[0]);
  at::Tensor rows = destination.reshape({destination.size(0), -1}).clone();
  TORCH_CHECK(source_rows.size(1) == rows.size(1), "src has ", source_rows.size(1),
              " elements per partition; dst ", rows.size(1));
  const std::vector<int64_t>& mask = instruction.axes;
  TORCH_CHECK(mask.size() == 32, "a shuffle mask has 32 entries; got ", mask.size());
  for (int64_t p = 0; p < rows.size(0); ++p) {
    const int64_t lane = mask[p % 32];
    if (lane == 255) continue;
    TORCH_CHECK(lane >= 0 && lane < 32, "a shuffle mask names source partitions 0 to 31 (or "
                "255); got ", lane);
    const int64_t from = source_rows.size(0) > 32 ? p / 32 * 32 + lane : lane;
    TORCH_CHECK(from < source_rows.size(0), "the shuffle reads partition ", from,
                " of a source of ", source_rows.size(0));
    rows[p].copy_(source_rows[from]);
  }
  destination.copy_(rows.reshape(destination.sizes()));
}

void Machine::LocalGather(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  const at::Tensor source = View(*operands[1]);
  const at::Tensor source_rows = source.reshape({source.size(0), -1});
  const at::Tensor index = ReadRows(*operands[2]).to(at::kLong);
  TORCH_CHECK(instruction.scalars[0] >= 1 && instruction.scalars[0] <= 32,
              "num_elem_per_idx is 1 to 32; got ", instruction.scalars[0]);
  const int64_t per_index = static_cast<int64_t>(instruction.scalars[0]);
  const int64_t partitions = source_rows.size(0);
  TORCH_CHECK(partitions % 16 == 0 && index.size(0) == partitions,
              "local_gather works on groups of 16 partitions; src has ", partitions,
              ", index ", index.size(0));
  const int64_t available = index.numel() / (partitions / 16);
  TORCH_CHECK(instruction.scalars[1] >= 0 && instruction.scalars[1] <= available,
              "num_valid_indices ", instruction.scalars[1], " of ", available);
  const int64_t valid =
      instruction.scalars[1] > 0 ? static_cast<int64_t>(instruction.scalars[1]) : available;
  std::vector<at::Tensor> groups;
  for (int64_t group = 0; group < partitions / 16; ++group) {
    // The group's indices, partition-first.
    const at::Tensor ids = index.narrow(0, group * 16, 16).t().reshape(-1).narrow(0, 0, valid);
    TORCH_CHECK(ids.min().item<int64_t>() >= 0 &&
                    ids.max().item<int64_t>() + per_index <= source_rows.size(1),
                "a local_gather index reads past the partition's ", source_rows.size(1),
                " elements");
    const at::Tensor offsets =
        (ids.unsqueeze(1) + at::arange(per_index, at::kLong).unsqueeze(0)).reshape(-1);
    groups.push_back(source_rows.narrow(0, group * 16, 16).index_select(1, offsets));
  }
  at::Tensor destination = View(*operands[0]);
  const at::Tensor gathered = at::cat(groups, 0);
  TORCH_CHECK(gathered.numel() == destination.numel(), "local_gather gives ", gathered.numel(),
              " elements; dst has ", destination.numel());
  destination.copy_(gathered.reshape(destination.sizes()));
}

void Machine::NGather(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  const at::Tensor data = View(*operands[1]);
  const at::Tensor rows = data.reshape({data.size(0), -1});
  const at::Tensor indices = ReadRows(*operands[2]).to(at::kLong);
  TORCH_CHECK(indices.size(0) == rows.size(0), "indices have ", indices.size(0),
              " partitions; data ", rows.size(0));
  TORCH_CHECK(indices.numel() == 0 ||
                  (indices.min().item<int64_t>() >= 0 && indices.max().item<int64_t>() < rows.size(1)),
              "a gather index is outside the partition's ", rows.size(1), " elements");
  at::Tensor destination = View(*operands[0]);
  const at::Tensor gathered = rows.gather(1, indices);
  TORCH_CHECK(gathered.numel() == destination.numel(), "the gather gives ", gathered.numel(),
              " elements; dst has ", destination.numel());
  destination.copy_(gathered.reshape(destination.sizes()));
}

void Machine::SequenceBounds(const NkiInstruction& instruction) {
  const at::Tensor ids = ReadRows(*instruction.operands[1]).contiguous();
  TORCH_CHECK(ids.size(0) == 1, "segment_ids has one partition; got ", ids.size(0));
  const int64_t n = ids.size(1);
  const float* id = ids.const_data_ptr<float>();
  at::Tensor bounds = at::empty({2, n}, at::kFloat);
  float* start = bounds.data_ptr<float>();
  float* end = start + n;
  for (int64_t i = 0; i < n; ++i) {
    start[i] = id[i] == 0 ? static_cast<float>(n)
                          : (i > 0 && id[i] == id[i - 1] ? start[i - 1] : static_cast<float>(i));
  }
  for (int64_t i = n; i-- > 0;) {
    end[i] = id[i] == 0 ? -1.0f
                        : (i + 1 < n && id[i] == id[i + 1] ? end[i + 1] : static_cast<float>(i + 1));
  }
  Write(*instruction.operands[0], bounds);
}

void Machine::NonzeroWithCount(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  const at::Tensor source = ReadRows(*operands[1]);
  at::Tensor destination = Read(*operands[0]);
  at::Tensor rows = destination.reshape({destination.size(0), -1}).clone();
  TORCH_CHECK(rows.size(1) == source.size(1) + 1, "dst holds each partition's ", source.size(1),
              " indices and their count (", source.size(1) + 1, " elements); it has ",
              rows.size(1));
  for (int64_t p = 0; p < source.size(0) && p < rows.size(0); p += 16) {
    const at::Tensor nonzero = source[p].ne(0).nonzero().reshape(-1).to(at::kFloat);
    const int64_t count = nonzero.numel();
    rows[p].fill_(instruction.scalars[1]);
    rows[p].narrow(0, 0, count).copy_(nonzero + instruction.scalars[0]);
    rows[p][source.size(1)] = static_cast<double>(count);
  }
  Write(*operands[0], rows);
}

void Machine::Random(const NkiInstruction& instruction) {
  at::Tensor destination = View(*instruction.operands[0]);
  uint64_t& state = memory_.random_state();
  if (Flag(instruction, 0)) {
    at::Tensor bits = at::empty({destination.numel()}, at::kLong);
    int64_t* out = bits.data_ptr<int64_t>();
    for (int64_t i = 0; i < bits.numel(); ++i) {
      out[i] = static_cast<int64_t>(NextRandom(state) & 0xFFFFFFFFULL);
    }
    // The low bits of each 32-bit draw, as many as the dtype holds.
    const int64_t width = static_cast<int64_t>(NkiElementBytes(DtypeOf(*instruction.operands[0]))) * 8;
    const at::Tensor kept = width >= 32 ? bits : bits.bitwise_and((int64_t{1} << width) - 1);
    destination.copy_(kept.reshape(destination.sizes()));
    return;
  }
  const double low = instruction.scalars[0];
  const double high = instruction.scalars[1];
  Write(*instruction.operands[0], UniformFloats(state, destination.numel()) * (high - low) + low);
}

void Machine::Dropout(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  const at::Tensor data = ReadRows(*operands[1]);
  const at::Tensor probability = Column(operands[2], instruction.scalars[0], data.size(0));
  const at::Tensor draws =
      UniformFloats(memory_.random_state(), data.numel()).reshape(data.sizes());
  Write(*operands[0], at::where(draws < probability, at::zeros({}, at::kFloat), data));
}

void Machine::SetRandomSeed(const NkiInstruction& instruction) {
  const at::Tensor seed = Read(*instruction.operands[0]);
  TORCH_CHECK(seed.numel() >= 1, "a seed tensor holds one value");
  // The seed's bits (whatever the value), mixed so that no seed leaves the
  // state zero, which xorshift would keep.
  const double value = seed.reshape(-1)[0].item<double>();
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  memory_.random_state() = (bits ^ 0x9E3779B97F4A7C15ULL) | 1;
}

}  // namespace neuron::rtd::nki::internal
