// Module SpoutEndpoints: under construction.
