#include "ptx_functions.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace attnforge {

namespace {

constexpr int kMmaArguments = 10;  // A: 4, B: 2, C: 4

std::string trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

const PtxFunction* known_mma(const std::string& name) {
  for (const PtxFunction& f : ptx_functions()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

const PtxLaneGroupFunction* known_lane_group(const std::string& name) {
  for (const PtxLaneGroupFunction& f : ptx_lane_group_functions()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

// One call as Halide's NVPTX back end writes it:
//   { // callseq N, 0
//   .param .b32 param0;  st.param.b32 [param0], %r51;  ...
//   .param .b64 retval0;
//   call.uni (retval0), NAME, (param0, ...);
//   ld.param.b64 %rd19, [retval0];
//   } // callseq N
// (a 32-bit result: .b32 retval0 and ld.param.b32).
struct Call {
  const PtxFunction* mma = nullptr;  // one of the two is set
  const PtxLaneGroupFunction* lane_group = nullptr;
  std::vector<std::string> arguments;  // registers or immediates
  std::string result;                  // the register the result goes to
  int result_bits = 0;
};

void require_form(const Call& call, const char* name, size_t arguments, int result_bits) {
  if (call.arguments.size() != arguments || call.result.empty() ||
      call.result_bits != result_bits) {
    throw std::invalid_argument(
        fmt::format("{}: expected {} 32-bit argument{} and a {}-bit result, as Halide passes them",
                    name, arguments, arguments == 1 ? "" : "s", result_bits));
  }
}

// The call in a callseq block's lines, or nullopt when it calls no known function.
std::optional<Call> parse_call(const std::vector<std::string>& lines) {
  Call call;
  std::map<int, std::string> arguments;
  for (const std::string& line : lines) {
    if (starts_with(line, "call")) {
      const size_t name_start = line.find("), ") + 3;
      const std::string name = line.substr(name_start, line.find(',', name_start) - name_start);
      call.mma = known_mma(name);
      call.lane_group = known_lane_group(name);
      if (!call.mma && !call.lane_group) return std::nullopt;
    } else if (starts_with(line, "st.param.b32")) {
      const size_t index = line.find("[param") + 6;
      const size_t value = line.find("], ") + 3;
      arguments[std::stoi(line.substr(index))] = trim(line.substr(value, line.find(';') - value));
    } else if (starts_with(line, "ld.param.b64") || starts_with(line, "ld.param.b32")) {
      const size_t reg = line.find('%');
      call.result = line.substr(reg, line.find(',', reg) - reg);
      call.result_bits = starts_with(line, "ld.param.b64") ? 64 : 32;
    }
  }
  if (!call.mma && !call.lane_group) return std::nullopt;
  for (const auto& [index, value] : arguments) call.arguments.push_back(value);
  if (call.mma) require_form(call, call.mma->name, kMmaArguments, 64);
  if (call.lane_group) require_form(call, call.lane_group->name, 1, 32);
  return call;
}

// The registers an instruction line writes: its first operand, or each
// register of a {...} list there. Stores write none.
std::vector<std::string> written_registers(const std::string& line) {
  if (starts_with(line, "st.") || starts_with(line, "//")) return {};
  const size_t operands = line.find_first_of(" \t");
  if (operands == std::string::npos) return {};
  std::string first = trim(line.substr(operands));
  if (first.empty()) return {};
  std::vector<std::string> registers;
  if (first[0] == '{') {
    std::istringstream list(first.substr(1, first.find('}') - 1));
    for (std::string reg; std::getline(list, reg, ',');) registers.push_back(trim(reg));
  } else {
    registers.push_back(trim(first.substr(0, first.find_first_of(",;"))));
  }
  return registers;
}

// An mma whose four results are held in registers for the call of the other
// half with the same arguments.
struct HeldMma {
  std::string instruction;
  std::vector<std::string> arguments;
  std::string results;  // prefix of the four registers
};

class Linker {
 public:
  std::string link(const std::string& ptx) {
    std::istringstream in(ptx);
    for (std::string line; std::getline(in, line);) {
      const std::string text = trim(line);
      if (starts_with(text, "{ // callseq")) {
        block_ = {line};
        in_block_ = true;
      } else if (in_block_) {
        block_.push_back(line);
        if (starts_with(text, "} // callseq")) {
          in_block_ = false;
          end_block();
        }
      } else {
        other_line(line, text);
      }
    }
    if (!changed_) return ptx;
    return remove_declarations(out_.str());
  }

 private:
  std::ostringstream out_;
  std::vector<std::string> block_;
  bool in_block_ = false, changed_ = false;
  std::optional<HeldMma> held_;
  int next_mma_ = 0;

  void other_line(const std::string& line, const std::string& text) {
    out_ << line << '\n';
    if (!held_) return;
    if (text.empty() || starts_with(text, "//")) return;
    // A scope on one line, as the back end writes a register pair's split:
    // its statements, less declarations.
    if (starts_with(text, "{") && text.back() == '}') {
      std::istringstream statements(text.substr(1, text.size() - 2));
      for (std::string statement; std::getline(statements, statement, ';');) {
        statement = trim(statement);
        if (!statement.empty() && !starts_with(statement, ".reg")) check_writes(statement);
      }
      return;
    }
    // A label, branch, barrier or longer scope ends the stretch the held
    // results are valid in.
    if (text.back() == ':' || starts_with(text, "bra") || starts_with(text, "@") ||
        starts_with(text, "ret") || starts_with(text, "bar") || starts_with(text, "{") ||
        starts_with(text, "}")) {
      held_.reset();
      return;
    }
    check_writes(text);
  }

  // Drops the held results when `instruction` writes one of their arguments.
  void check_writes(const std::string& instruction) {
    for (const std::string& reg : written_registers(instruction)) {
      for (const std::string& argument : held_->arguments) {
        if (reg == argument) {
          held_.reset();
          return;
        }
      }
    }
  }

  void end_block() {
    std::vector<std::string> lines;
    for (const std::string& line : block_) lines.push_back(trim(line));
    const std::optional<Call> call = parse_call(lines);
    if (!call) {  // another function's call: its result may overwrite an argument
      for (const std::string& line : block_) other_line(line, trim(line));
      return;
    }
    changed_ = true;
    if (call->lane_group) {
      emit_lane_group(*call->lane_group, call->arguments[0], call->result);
      return;
    }
    const PtxFunction& f = *call->mma;
    const bool reuse =
        held_ && held_->instruction == f.instruction && held_->arguments == call->arguments;
    if (!reuse) emit_mma(f, call->arguments);
    const std::string& r = held_->results;
    out_ << fmt::format("\tmov.b64 \t{}, {{{}{}, {}{}}};\n", call->result, r, f.first_result, r,
                        f.first_result + 1);
  }

  void emit_mma(const PtxFunction& f, const std::vector<std::string>& a) {
    const std::string results = fmt::format("%afmma{}_", next_mma_++);
    out_ << fmt::format("\t.reg .f32 \t{}<4>;\n", results);
    out_ << "\t{\n\t.reg .b32 \t%afin<6>;\n\t.reg .f32 \t%afacc<4>;\n";
    for (int i = 0; i < 6; ++i) out_ << fmt::format("\tmov.b32 \t%afin{}, {};\n", i, a[i]);
    for (int i = 0; i < 4; ++i) out_ << fmt::format("\tmov.b32 \t%afacc{}, {};\n", i, a[6 + i]);
    out_ << fmt::format(
        "\t{} \t{{{r}0, {r}1, {r}2, {r}3}}, {{%afin0, %afin1, %afin2, %afin3}}, "
        "{{%afin4, %afin5}}, {{%afacc0, %afacc1, %afacc2, %afacc3}};\n\t}}\n",
        f.instruction, fmt::arg("r", results));
    held_ = HeldMma{f.instruction, a, results};
  }

  // The group's reduction of `value` into `result`: a butterfly over lanes
  // 1 apart, then 2 apart. Writing `result` may change a held mma's argument.
  void emit_lane_group(const PtxLaneGroupFunction& f, const std::string& value,
                       const std::string& result) {
    out_ << "\t{\n\t.reg .f32 \t%afgv, %afgs;\n";
    out_ << fmt::format("\tmov.b32 \t%afgv, {};\n", value);
    for (int distance : {1, 2}) {
      out_ << fmt::format("\tshfl.sync.bfly.b32 \t%afgs, %afgv, {}, 31, -1;\n", distance);
      out_ << fmt::format("\t{} \t%afgv, %afgv, %afgs;\n", f.combine);
    }
    out_ << fmt::format("\tmov.b32 \t{}, %afgv;\n\t}}\n", result);
    if (held_) check_writes("mov.b32 " + result + ", %afgv;");
  }

  // Drops each known function's `.extern .func ... ;` declaration.
  static std::string remove_declarations(const std::string& ptx) {
    std::string result = ptx;
    std::vector<const char*> names;
    for (const PtxFunction& f : ptx_functions()) names.push_back(f.name);
    for (const PtxLaneGroupFunction& f : ptx_lane_group_functions()) names.push_back(f.name);
    for (const char* name_text : names) {
      const size_t name = result.find(std::string(name_text) + "\n");
      if (name == std::string::npos) continue;
      const size_t start = result.rfind(".extern .func", name);
      const size_t end = result.find(';', name);
      if (start == std::string::npos || end == std::string::npos) continue;
      result.erase(start, end - start + 1);
    }
    return result;
  }
};

}  // namespace

const std::vector<PtxFunction>& ptx_functions() {
  static const std::vector<PtxFunction> functions = {
      {"attnforge_mma_f16_f32_lo", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 0},
      {"attnforge_mma_f16_f32_hi", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 2},
      {"attnforge_mma_bf16_f32_lo", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 0},
      {"attnforge_mma_bf16_f32_hi", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 2},
  };
  return functions;
}

const std::vector<PtxLaneGroupFunction>& ptx_lane_group_functions() {
  static const std::vector<PtxLaneGroupFunction> functions = {
      {"attnforge_lane_group_max_f32", "max.f32"},
      {"attnforge_lane_group_sum_f32", "add.f32"},
  };
  return functions;
}

std::string link_ptx_functions(const std::string& ptx) {
  if (ptx.find("attnforge_mma_") == std::string::npos &&
      ptx.find("attnforge_lane_group_") == std::string::npos) {
    return ptx;
  }
  return Linker().link(ptx);
}

}  // namespace attnforge
