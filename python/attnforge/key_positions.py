"""Where a query sits on the key axis: query i at key i + aligned_offset(...).
The kernels place it by the same rule (spec/key_range.h, aligned_position).
No import of the native module, so peers and references load it alone."""


def aligned_offset(alignment, valid_keys, q_len):
    """0 for "top_left"; valid_keys - q_len for "bottom_right", so the last query
    meets the last valid key. valid_keys may be an int or an array (one per sequence)."""
    if alignment == "bottom_right":
        return valid_keys - q_len
    return valid_keys * 0
