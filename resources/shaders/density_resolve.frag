// Density image: shows the finished density picture (binned and coloured on the CPU,
// one RGBA8 texel per aggregation texel), resampled when a zoom has not been
// re-aggregated yet. Cost is one texel fetch per pixel, whatever the number of cells.
uniform sampler2D u_image;     // RGBA8, opaque: the background where no cell fell
uniform int u_downsample;      // screen pixels per aggregation texel
uniform vec2 u_offset;         // aggregation position (device px) of screen pixel (0, 0)
uniform float u_lookup_scale;  // aggregation px per screen px (1 except right after a zoom)

out vec4 o_color;

void main() {
    ivec2 texel = ivec2(floor(gl_FragCoord.xy * u_lookup_scale + u_offset)) / u_downsample;
    texel = clamp(texel, ivec2(0), textureSize(u_image, 0) - 1);
    o_color = vec4(texelFetch(u_image, texel, 0).rgb, 1.0);
}
