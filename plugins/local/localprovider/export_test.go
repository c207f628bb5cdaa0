package localprovider

import "path/filepath"

// RecordPending records path (a folder below the root) in the pending
// record of dataDir, as a Create (kind "create", with its key) or a Delete
// (kind "delete") cut short by a crash leaves it.
func RecordPending(dataDir, kind, path, key string) error {
	return recordPending(dataDir, pendingEntry{Kind: kind, Path: path, Key: key})
}

// RecordPendingDelete records, in the pending record of dataDir, a Delete
// of the resource id (carrying key) cut short after it moved the folder
// to path.
func RecordPendingDelete(dataDir, path, id, key string) error {
	return recordPending(dataDir, pendingEntry{Kind: pendingDelete, Path: path, ID: id, Key: key})
}

// recordPending adds e, its path's folder resolved, to dataDir's record.
func recordPending(dataDir string, e pendingEntry) error {
	real, err := filepath.EvalSymlinks(filepath.Dir(e.Path))
	if err != nil {
		return err
	}
	file := filepath.Join(dataDir, PendingFile)
	rec, err := loadPending(file)
	if err != nil {
		return err
	}
	e.Path = filepath.Join(real, filepath.Base(e.Path))
	rec.add(e)
	return rec.save(file)
}

// BeforeRename makes p's Delete call f with the folder it is about to move
// out of the way, after it checked it (a test's window for a swap).
func BeforeRename(p any, f func(dir string)) { p.(*provider).beforeRename = f }
