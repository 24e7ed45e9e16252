// Test support: under construction.
