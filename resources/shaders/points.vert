// Point layer: one vertex per cell. Positions and attributes live in separate buffers
// so that recolouring rewrites only the attribute buffer.
layout(location = 0) in vec2 a_position;  // world units
layout(location = 1) in vec4 a_color;     // normalised RGBA8; a == 0 hides the cell
layout(location = 2) in float a_value;    // continuous value scaled to [0, 1]

uniform vec4 u_transform;   // ndc = position * xy + zw
uniform float u_point_size; // pixels

out vec4 v_color;
out float v_value;

void main() {
    v_color = a_color;
    v_value = a_value;
    gl_PointSize = u_point_size;
    // Hidden cells are placed outside the clip volume: points are clipped by centre.
    gl_Position = a_color.a == 0.0 ? vec4(2.0, 2.0, 2.0, 1.0)
                                   : vec4(a_position * u_transform.xy + u_transform.zw, 0.0, 1.0);
}
