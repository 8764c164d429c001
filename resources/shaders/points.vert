// Point layer: one vertex per cell. Positions and attributes live in separate buffers
// so that recolouring rewrites only the attribute buffer.
layout(location = 0) in vec2 a_position;  // world units
layout(location = 1) in vec4 a_color;     // normalised RGBA8; a == 0 hides the cell

uniform vec4 u_transform;   // ndc = position * xy + zw
uniform float u_point_size; // pixels

// One colour per point: flat, so that the rasteriser sets up no interpolation.
flat out vec4 v_color;

void main() {
    v_color = a_color;
    gl_PointSize = u_point_size;
    // Hidden cells are placed outside the clip volume: points are clipped by centre.
    gl_Position = a_color.a == 0.0 ? vec4(2.0, 2.0, 2.0, 1.0)
                                   : vec4(a_position * u_transform.xy + u_transform.zw, 0.0, 1.0);
}
