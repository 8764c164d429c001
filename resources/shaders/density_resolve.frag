// Density image: maps the aggregated counts (and colour or value sums) of each pixel
// to a colour. Cost is one texel fetch per pixel, whatever the number of cells.
uniform sampler2D u_sums;      // RGBA32F: count, then colour sums or value sum
uniform sampler2D u_colormap;  // 256 x 1 RGBA8 colour map
uniform int u_mode;            // 0: colour map of log count, 1: mean colour, 2: colour map of mean value
uniform float u_log_max;       // log(1 + largest count)
uniform vec3 u_background;
uniform int u_downsample;      // screen pixels per aggregation texel
uniform vec2 u_offset;         // aggregation position (device px) of screen pixel (0, 0)
uniform float u_lookup_scale;  // aggregation px per screen px (1 except right after a zoom)

out vec4 o_color;

vec3 colormap(float t) {
    int index = int(clamp(floor(t * 256.0), 0.0, 255.0));
    return texelFetch(u_colormap, ivec2(index, 0), 0).rgb;
}

void main() {
    ivec2 texel = ivec2(floor(gl_FragCoord.xy * u_lookup_scale + u_offset)) / u_downsample;
    vec4 sums = texelFetch(u_sums, texel, 0);
    float count = sums.r;
    if (count <= 0.0) {
        o_color = vec4(u_background, 1.0);
        return;
    }
    float intensity = clamp(log(1.0 + count) / max(u_log_max, 1e-6), 0.0, 1.0);
    vec3 color;
    float alpha = 0.35 + 0.65 * intensity;
    if (u_mode == 1) {
        color = sums.gba / count;
    } else if (u_mode == 2) {
        color = colormap(sums.g / count);
    } else {
        color = colormap(intensity);
        alpha = 1.0;
    }
    o_color = vec4(mix(u_background, color, alpha), 1.0);
}
