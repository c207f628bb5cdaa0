package pgstore

// MigrationTo1 is the schema's first version, for the test that migrates
// a database an older bulwark wrote.
var MigrationTo1 = migrations[0]

// ClaimsLockIDs is how pg_locks shows the claims lock of schema.
func ClaimsLockIDs(schema string) (classid, objid int64) { return lockIDs(claimsKey(schema)) }

// MigrationTo2 takes version 1 to 2 (the bodies' checksums), for the test
// that migrates a version-2 database's lock rows.
var MigrationTo2 = migrations[1]

// Settings are the application name and connect timeout of each of p's
// pools, as its sessions are made.
func (p *Pools) Settings() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, pool := range p.pools {
		c := pool.Config().ConnConfig
		out = append(out, c.RuntimeParams["application_name"]+" "+c.ConnectTimeout.String())
	}
	return out
}
