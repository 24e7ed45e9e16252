// Module SpoutSQLite: under construction.
