flat in vec4 v_color;

uniform float u_opacity;  // [0, 1]
uniform int u_round;      // 1: discs, 0: squares (cheaper; used for tiny points)

out vec4 o_color;

void main() {
    if (u_round != 0) {
        vec2 offset = gl_PointCoord * 2.0 - 1.0;
        if (dot(offset, offset) > 1.0) discard;
    }
    o_color = vec4(v_color.rgb, u_opacity);
}
