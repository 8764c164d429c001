// Placeholder translation unit until the algorithms land.
