// Placeholder translation unit until the backend lands.
