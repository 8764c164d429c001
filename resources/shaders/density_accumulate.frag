// Density aggregation: every cell adds (1, r, g, b) or (1, value, 0, 0) to its pixel of
// a float texture with additive blending, so a pixel holds its cell count and the sum
// of their colours (per-category colour mixing) or of their values.
in vec4 v_color;
in float v_value;

uniform int u_sum_values;  // 1: sum values (continuous colouring), 0: sum colours

out vec4 o_sum;

void main() {
    o_sum = u_sum_values != 0 ? vec4(1.0, v_value, 0.0, 0.0) : vec4(1.0, v_color.rgb);
}
