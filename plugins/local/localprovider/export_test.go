package localprovider

import "path/filepath"

// RecordPending records path (a folder below the root) in the pending
// record of dataDir, as a Create (kind "create", with its key) or a Delete
// (kind "delete") cut short by a crash leaves it.
func RecordPending(dataDir, kind, path, key string) error {
	real, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return err
	}
	file := filepath.Join(dataDir, PendingFile)
	rec, err := loadPending(file)
	if err != nil {
		return err
	}
	rec.add(pendingEntry{Kind: kind, Path: filepath.Join(real, filepath.Base(path)), Key: key})
	return rec.save(file)
}
