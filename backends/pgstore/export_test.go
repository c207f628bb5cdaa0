package pgstore

// MigrationTo1 is the schema's first version, for the test that migrates
// a database an older bulwark wrote.
var MigrationTo1 = migrations[0]
