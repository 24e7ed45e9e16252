// Module SpoutDrivers: under construction.
