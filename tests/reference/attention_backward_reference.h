// The gradients of attention computed the plain way, in double, from the
// definitions: for a loss whose gradient by the output is d_out, with P the
// reference's weights and s the scaled score q.k * scale,
//   dV_j = sum_i P_ij dO_i,  dP_ij = dO_i . V_j,
//   dlogit_ij = P_ij (dP_ij - sum_j' P_ij' dP_ij')  (dBias_ij),
//   ds_ij = dlogit_ij * dlogit/ds (the softcap's 1 - tanh^2, else 1),
//   dQ_i = scale * sum_j ds_ij K_j,  dK_j = scale * sum_i ds_ij Q_i,
// with dK and dV summed over each KV head's query heads. Shares nothing with
// the kernels beyond the spec; its own test checks it against finite
// differences of the forward reference.
#pragma once

#include <vector>

#include "attention_reference.h"

namespace attnforge::reference {

struct Gradients {
  std::vector<double> dq;      // [B][H][Lq][D]
  std::vector<double> dk, dv;  // [B][H_kv][Lk][D]
  // [B][H][Lq][Lk]: the gradient by the logit, dlogit_ij, which is a bias
  // tensor's (it is added after the softcap); 0 where the mask hides a key.
  std::vector<double> d_bias;
};

// Needs a problem without a modifier; d_out is [B][H][Lq][D].
Gradients attention_backward(const Problem& problem, const std::vector<double>& d_out);

}  // namespace attnforge::reference
