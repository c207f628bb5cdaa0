package localprovider

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/bulwark-iac/bulwark/sdk"
)

// MetadataFile is the file, in every resource folder, that makes it a
// resource of this provider.
const MetadataFile = ".bulwark.json"

// metadataVersion is the format version of MetadataFile.
const metadataVersion = 1

// metadata is what MetadataFile holds.
type metadata struct {
	Version        int    `json:"version"`
	ID             string `json:"id"`
	Type           string `json:"type"`
	Name           string `json:"name"`
	IdempotencyKey string `json:"idempotency_key"`
	// Path is the folder relative to the root, slash separated.
	Path string `json:"path"`
	// Attributes are the configured values plus created_at.
	Attributes sdk.Attributes `json:"attributes"`
}

func readMetadata(dir string) (*metadata, error) {
	b, err := os.ReadFile(filepath.Join(dir, MetadataFile))
	if err != nil {
		return nil, err
	}
	var m metadata
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %w", filepath.Join(dir, MetadataFile), err)
	}
	if m.Version != metadataVersion {
		return nil, fmt.Errorf("%s has format version %d; this provider reads %d", filepath.Join(dir, MetadataFile), m.Version, metadataVersion)
	}
	return &m, nil
}

func writeMetadata(dir string, m *metadata) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode metadata: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, MetadataFile), append(b, '\n'))
}

// entry is a resource found on disk.
type entry struct {
	dir  string // absolute
	meta *metadata
}

// attributes returns the attributes Read reports: the stored ones plus the
// folder.
func (e *entry) attributes() sdk.Attributes {
	a := maps.Clone(e.meta.Attributes)
	if a == nil {
		a = sdk.Attributes{}
	}
	a[attrFolder] = e.dir
	return a
}

// inventory is what a scan of the root finds.
type inventory struct {
	resources []*entry
}

func (inv *inventory) find(match func(*metadata) bool) *entry {
	for _, e := range inv.resources {
		if match(e.meta) {
			return e
		}
	}
	return nil
}

func (inv *inventory) byID(id string) *entry {
	return inv.find(func(m *metadata) bool { return m.ID == id })
}

func (inv *inventory) byKey(key string) *entry {
	return inv.find(func(m *metadata) bool { return m.IdempotencyKey == key })
}

func (inv *inventory) byTypeName(typ, name string) *entry {
	return inv.find(func(m *metadata) bool { return m.Type == typ && m.Name == name })
}

// scan walks the root: every folder holding MetadataFile at the place its
// metadata records (Path) is a resource (not descended into); dot-folders
// (the provider's transient folders among them) are skipped. Symlinks are
// not followed. It writes nothing.
//
// A folder whose MetadataFile records another place is a copy (`cp -a
// root/shared/data root/backup-of-data`) or a folder moved by hand: a
// stranger, never a resource. It holds the same id, key and name as the
// real one, so finding a resource by any of them anywhere in the root would
// read, and delete, the copy; a resource is found at its recorded place
// only. A stranger is neither descended into nor ever touched; a Create
// whose folder is where a stranger sits is a conflict, as for any folder
// it did not make.
func scan(root string) (*inventory, error) {
	inv := &inventory{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != root && errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		if path == root || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		m, err := readMetadata(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if rel, err := filepath.Rel(root, path); err != nil || filepath.ToSlash(rel) != m.Path {
			return fs.SkipDir // a stranger: not at the place it records
		}
		inv.resources = append(inv.resources, &entry{dir: path, meta: m})
		return fs.SkipDir
	})
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", root, err)
	}
	return inv, nil
}

// newID returns "local-<type>-<name>-<8 hex>", unique in inv.
func newID(inv *inventory, typ, name string) (string, error) {
	for {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("generate id: %w", err)
		}
		id := fmt.Sprintf("local-%s-%s-%s", typ, name, hex.EncodeToString(b[:]))
		if inv.byID(id) == nil {
			return id, nil
		}
	}
}

// seed writes the data a durable type starts with into dir, like the aws
// provider's object or row: s3_bucket gets objects/seed.txt, dynamodb_table
// rows/seed.json (one JSON row keyed by hash_key, "id" by default).
func seed(dir string, m *metadata) error {
	switch m.Type {
	case "s3_bucket":
		objects := filepath.Join(dir, "objects")
		if err := mkdir(objects); err != nil {
			return err
		}
		body := fmt.Sprintf("seed object of s3_bucket %s, written by bulwark-provider-local at %v\n", m.Name, m.Attributes[attrCreatedAt])
		return writeFileAtomic(filepath.Join(objects, "seed.txt"), []byte(body))
	case "dynamodb_table":
		rows := filepath.Join(dir, "rows")
		if err := mkdir(rows); err != nil {
			return err
		}
		hashKey, _ := m.Attributes["hash_key"].(string)
		if hashKey == "" {
			hashKey = "id"
		}
		row := map[string]any{hashKey: "seed", "source": "bulwark-provider-local", "created_at": m.Attributes[attrCreatedAt]}
		b, err := json.Marshal(row)
		if err != nil {
			return err
		}
		return writeFileAtomic(filepath.Join(rows, "seed.json"), append(b, '\n'))
	}
	return nil
}
