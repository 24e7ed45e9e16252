// Module SpoutPostgres: under construction.
