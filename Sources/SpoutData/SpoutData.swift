// Module SpoutData: under construction.
