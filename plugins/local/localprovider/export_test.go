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

// BeforeRename makes p's Delete call f with the folder it is about to move
// out of the way, after it checked it (a test's window for a swap).
func BeforeRename(p any, f func(dir string)) { p.(*provider).beforeRename = f }

// RecordPendingDelete records, in the pending record of dataDir, a Delete
// of the resource id (carrying key) cut short after it moved the folder
// to path.
func RecordPendingDelete(dataDir, path, id, key string) error {
	real, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return err
	}
	file := filepath.Join(dataDir, PendingFile)
	rec, err := loadPending(file)
	if err != nil {
		return err
	}
	rec.add(pendingEntry{Kind: pendingDelete, Path: filepath.Join(real, filepath.Base(path)), ID: id, Key: key})
	return rec.save(file)
}
