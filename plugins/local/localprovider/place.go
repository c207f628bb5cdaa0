package localprovider

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// atPlace looks for the resource id at the place its private data names
// (pl, as Create and Import return it), reading that folder and the
// folders on the way to it, not the whole root. decided says whether the
// place alone answers as a scan of the root would: then e is the resource
// (nil: there is none). When it is not decided the caller scans.
//
// A resource's place is where its Create built it, for good: nothing
// moves a resource's folder (one moved or copied by hand records another
// place and is a stranger), and its id is made once, unique in the root.
// So:
//
//   - found: every folder on the way from the root is a real folder (no
//     symlink; no name starting with ".", which checkRel already refuses)
//     holding no MetadataFile, and the folder at the place holds a
//     MetadataFile recording this place and this id. The scan finds it
//     there too: it walks the same folders, descends into each (none is a
//     resource or a stranger) and takes the folder at the place.
//   - absent: the folders on the way hold no MetadataFile, and one of
//     them, or the place, does not exist or holds no MetadataFile. The
//     resource's only place holds no resource, so it is gone.
//   - anything else is left to the scan, which answers exactly as before
//     this lookup existed: a symlink or a file on the way, a MetadataFile
//     on the way (the place is inside a resource or a stranger, which the
//     scan does not descend into), a MetadataFile at the place that cannot
//     be read or records another place or another id, a private datum that
//     is not a place.
//
// Where the two could differ is a twin made by hand: a folder elsewhere
// whose MetadataFile was edited to record its own place and this id. The
// scan could take that twin (the first found by id), which a Delete then
// refused for living elsewhere than recorded; this lookup takes the folder
// at the recorded place, the one the host recorded, and leaves the twin
// untouched.
func atPlace(root, id string, private []byte) (e *entry, decided bool) {
	var pl place
	if root == "" || id == "" || len(private) == 0 || json.Unmarshal(private, &pl) != nil || pl.Path == "" {
		return nil, false
	}
	if rel, msg := checkRel(pl.Path); msg != "" || rel != pl.Path {
		return nil, false
	}
	parts := strings.Split(pl.Path, "/")
	dir := root
	for i, part := range parts {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, true
		}
		if err != nil || !fi.IsDir() {
			return nil, false // a symlink (Lstat does not follow it), a file, unreadable
		}
		m, err := readMetadata(dir)
		if i < len(parts)-1 {
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, false // a resource or a stranger on the way, or a MetadataFile that cannot be read
			}
			continue
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, true // a plain folder: no resource at the place
		case err != nil, m.Path != pl.Path, m.ID != id:
			return nil, false
		}
		return &entry{dir: dir, meta: m}, true
	}
	return nil, false // not reached: checkRel leaves at least one part
}

// byPlace is atPlace on p's root; p.mu must be held. A read-only session
// whose root does not exist has no resource.
func (p *provider) byPlace(id string, private []byte) (*entry, bool) {
	if p.absent {
		return nil, true
	}
	return atPlace(p.root, id, private)
}
