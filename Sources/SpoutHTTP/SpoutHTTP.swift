// Module SpoutHTTP: under construction.
